# The internal face of delegate_lens.dataset, each name declared once (delegate_lens._lazy):
# for delegate-lens's own packages, not for users or plugins.
from delegate_lens.dataset._check import check_dataset as check_dataset
from delegate_lens.dataset._check import format_check as format_check
from delegate_lens.dataset._limits import check_timeout as check_timeout
from delegate_lens.dataset._limits import parse_size as parse_size
from delegate_lens.dataset._query import format_for as format_for
from delegate_lens.dataset._sources import parse_labels as parse_labels
