# The internal face of delegate_lens.backends_demo, each name declared once (delegate_lens._lazy):
# for delegate-lens's own packages, not for users or plugins.
from delegate_lens.backends_demo._demo import run_demo as run_demo
from delegate_lens.backends_demo._runtime import parse_slowdown_value as parse_slowdown_value
