"""The reference's module path of the schema version."""

from delegate_lens.bundled_program.schema import BUNDLED_PROGRAM_SCHEMA_VERSION

__all__ = ["BUNDLED_PROGRAM_SCHEMA_VERSION"]
