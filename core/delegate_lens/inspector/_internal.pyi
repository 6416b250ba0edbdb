# The internal face of delegate_lens.inspector, each name declared once (delegate_lens._lazy):
# for delegate-lens's own packages, not for users or plugins.
from delegate_lens.inspector._attribution import EXECUTE as EXECUTE
from delegate_lens.inspector._memory import write_memory_table as write_memory_table
from delegate_lens.inspector._modules import MODULE_COLUMNS as MODULE_COLUMNS
from delegate_lens.inspector._modules import write_module_table as write_module_table
from delegate_lens.inspector._optypes import OP_TYPE_COLUMNS as OP_TYPE_COLUMNS
from delegate_lens.inspector._optypes import write_op_type_table as write_op_type_table
