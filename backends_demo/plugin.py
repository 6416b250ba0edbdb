"""Entry point of the demo backend (group ``delegate_lens``); hooks are added by issue 5."""
