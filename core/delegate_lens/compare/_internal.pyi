# The internal face of delegate_lens.compare, each name declared once (delegate_lens._lazy):
# for delegate-lens's own packages, not for users or plugins.
from delegate_lens.compare._output import result_sections as result_sections
from delegate_lens.compare._output import summary_lines as summary_lines
from delegate_lens.compare._stats import interval_samples as interval_samples
