"""Answers of ``POST /tag`` and ``GET /images/{id}/tags``: tags per language, each with the concept it names."""

from __future__ import annotations

from pydantic import BaseModel, Field

CONCEPT_PATTERN = r"^[0-9]{8}-n$"


class TagOut(BaseModel):
    tag: str = Field(max_length=200, description="The tag in the answer's language.")
    score: float = Field(
        description="By concept (the default): the concept's score for the photo (class mass + weighted "
        "similarity + frequency, docs/tagging.md). Other sources: W1·cos(image, tag) + W2·cos(source, tag)."
    )
    source: str = Field(
        max_length=200,
        description="By concept: where the name comes from, `lexicon` (the concept lexicon) or `vocabulary` (the "
        "language's tag vocabulary, where the lexicon has no name). Other sources: the English source tag.",
    )
    concept: str | None = Field(
        default=None,
        max_length=10,
        pattern=CONCEPT_PATTERN,
        description="The concept the tag names: a WordNet 3.0 noun synset (`02084071-n` is dog), the same in every "
        "language, so clients can group tags across languages. Null for a source word the lexicon lacks.",
    )
    english: str | None = Field(
        default=None, max_length=200, description="The concept's English name (else the English source tag)."
    )


TagResponse = dict[str, list[TagOut]]
