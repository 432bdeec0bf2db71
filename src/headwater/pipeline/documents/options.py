"""How documents become columns (`headwater.pipeline.mongodb.*`), kept apart from the
Arrow-heavy modules so the configuration stays light to import."""

from __future__ import annotations

from dataclasses import dataclass

NESTED_MODES = ("struct", "json")


@dataclass(frozen=True, slots=True)
class DocumentOptions:
    """`nested`: "struct" (nested documents as structs, arrays as arrays, JSON text where a
    field's shape varies) or "json" (every nested document and array as JSON text).
    `flatten_struct`/`delimiter`: as ExtractNewDocumentState's `flatten.struct` and
    `flatten.struct.delimiter` (nested documents become top-level columns `a_b`)."""

    nested: str = "struct"
    flatten_struct: bool = False
    delimiter: str = "_"
