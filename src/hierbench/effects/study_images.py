"""Which test images two studies scored, and what that adds to the variance of the difference
of their seed means (``compare --published``).

Every seed of a study is scored on the same test images, so their draw moves the whole study
by an amount of variance V (the effect tables' shared variance: se² − s²/n). Two studies on the
same images share that move and it cancels in their difference; on other images each brings its
own, V₁ + V₂. A run folder says which images it scored (its sealed test split's hash) and how
much they move each planned endpoint; a table from outside a run says neither, so whether the
images differ is unknown and is read as if they did.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SAME_IMAGES = "same test images"  # both sides' sealed test splits hash alike
OTHER_IMAGES = "other test images"  # both hashes known and different
UNKNOWN_IMAGES = "test images unknown"  # a side without a run folder: read as other images


@dataclass(frozen=True)
class StudyImages:
    """What one side knows of its test images: each dataset's sealed test split hash, and each
    planned endpoint's test-image variance V of its seed mean (``(dataset, effect)`` → se² − s²/n
    of the run's effect tables). Empty for a table from outside a run."""

    test_hashes: Mapping[str, str] = field(default_factory=dict)
    variances: Mapping[tuple[str, str], float] = field(default_factory=dict)


NOTHING_KNOWN = StudyImages()


def images_case(dataset: str, run: StudyImages, published: StudyImages) -> str:
    """Whether the two sides scored the same test images of ``dataset`` (both test splits'
    hashes known and equal), other ones (known and different), or unknown."""
    ours, theirs = run.test_hashes.get(dataset), published.test_hashes.get(dataset)
    if ours is None or theirs is None:
        return UNKNOWN_IMAGES
    return SAME_IMAGES if ours == theirs else OTHER_IMAGES


def images_variance(
    key: tuple[str, str], case: str, run: StudyImages, published: StudyImages
) -> tuple[float, str]:
    """The test images' part of the difference's variance, V₁ + V₂ (0 on the same images), and
    a note when a side's V was borrowed or neither side's is known."""
    if case == SAME_IMAGES:
        return 0.0, ""
    ours, theirs = run.variances.get(key), published.variances.get(key)
    if ours is None and theirs is None:
        return 0.0, (
            "neither side's test-image variance is known: the interval holds the seeds alone, "
            "as if both studies scored the same test images"
        )
    if ours is None or theirs is None:
        known = theirs if ours is None else ours
        lacking = "the run's" if ours is None else "the published table's"
        other = "the published table's" if ours is None else "the run's"
        return 2 * known, f"{lacking} test-image variance taken equal to {other}"
    return ours + theirs, ""
