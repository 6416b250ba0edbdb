"""Ahead-of-time stage: debug handles, lowering through backend plugins, program, ETRecord.

Modules here import torch; ``import delegate_lens`` reaches them only lazily.
"""
