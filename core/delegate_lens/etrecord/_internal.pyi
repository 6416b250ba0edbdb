# The internal face of delegate_lens.etrecord, each name declared once (delegate_lens._lazy):
# for delegate-lens's own packages, not for users or plugins.
from delegate_lens.etrecord._maps import canonical_identifier as canonical_identifier
from delegate_lens.etrecord._maps import load_json as load_json
from delegate_lens.etrecord._torch_io import quiet_torch as quiet_torch
from delegate_lens.etrecord._torch_io import to_torch as to_torch
