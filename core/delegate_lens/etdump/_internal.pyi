# The internal face of delegate_lens.etdump, each name declared once (delegate_lens._lazy):
# for delegate-lens's own packages, not for users or plugins.
from delegate_lens.etdump._columns import file_wide_columns as file_wide_columns
