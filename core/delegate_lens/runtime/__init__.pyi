# The names of delegate_lens.runtime, each declared once: type checkers read this stub, and
# the face loads each name on first use from the module it is imported from here
# (delegate_lens._lazy): ETDumpGen and the event tracer without torch, Program and Method
# with it.
from delegate_lens.runtime._bundled import load_bundled_input as load_bundled_input
from delegate_lens.runtime._bundled import verify_method_outputs as verify_method_outputs
from delegate_lens.runtime._etdump_gen import DebugBufferFullWarning as DebugBufferFullWarning
from delegate_lens.runtime._etdump_gen import ETDumpGen as ETDumpGen
from delegate_lens.runtime._event_tracer import UNSET_DELEGATE_DEBUG_ID as UNSET_DELEGATE_DEBUG_ID
from delegate_lens.runtime._event_tracer import EventTracer as EventTracer
from delegate_lens.runtime._event_tracer import EventTracerEntry as EventTracerEntry
from delegate_lens.runtime._event_tracer import (
    event_tracer_end_profiling_delegate as event_tracer_end_profiling_delegate,
)
from delegate_lens.runtime._event_tracer import (
    event_tracer_log_output_delegate as event_tracer_log_output_delegate,
)
from delegate_lens.runtime._event_tracer import (
    event_tracer_log_profiling_delegate as event_tracer_log_profiling_delegate,
)
from delegate_lens.runtime._event_tracer import (
    event_tracer_start_profiling_delegate as event_tracer_start_profiling_delegate,
)
from delegate_lens.runtime._program import BackendExecutionContext as BackendExecutionContext
from delegate_lens.runtime._program import Method as Method
from delegate_lens.runtime._program import Program as Program
