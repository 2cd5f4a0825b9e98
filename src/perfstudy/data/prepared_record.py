"""What a prepared dataset is, as a typed record: the facts of its manifest that later stages
read (the remedy's pairing, cost and payback, MLflow's tags), made in one place from the
manifest perfstudy.data.prepare writes. The manifest stays the file of record (with its file
list); this record is the part of it a run summary carries (summary.json dataset.prepared), in
the manifest's own shape, so summaries written before it existed read back unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfstudy.common.records import doc, from_dict
from perfstudy.data.prepare import Settings


@dataclass(frozen=True)
class PreparedSource:
    """The dataset a prepared one was made from."""

    path: str = doc("the source's manifest.json")
    sha256: str = doc("sha256 of that manifest file (a reused preparation must match it)")
    dataset_sha256: str = doc("the source's content hash (its rows): the arm that read it "
                              "pairs with the prepared arm")
    root: str = doc("the source's folder")
    source: str | None = doc("how the source was made: generated | folder", None)


@dataclass(frozen=True)
class SizeBefore:
    """The source's images."""

    bytes: int = doc("bytes of the source's image files")
    mean_megapixels: float = doc("mean megapixels per source image")
    total_megapixels: float = doc("megapixels of all source images")


@dataclass(frozen=True)
class SizeAfter:
    """The prepared images."""

    bytes: int = doc("bytes of the re-encoded images")
    record_bytes: int = doc("bytes on disk of the prepared dataset (MindRecord or ImageFolder)")
    mean_megapixels: float = doc("mean megapixels per prepared image")
    total_megapixels: float = doc("megapixels of all prepared images")
    short_side_min: int = doc("the smallest short side written, px")
    short_side_max: int = doc("the largest short side written, px")


@dataclass(frozen=True)
class PsnrCheck:
    """How close the re-encoded images are to the full decode resized the same way."""

    images: int = doc("images sampled")
    min: float = doc("the lowest PSNR of the sample, dB")
    mean: float = doc("the mean PSNR of the sample, dB")
    against: str = doc("what the PSNR compares with")


@dataclass(frozen=True)
class PreparationCost:
    """What preparing the copy took, once."""

    wall_s: float = doc("wall-clock seconds")
    cpu_s: float = doc("CPU seconds (the process and its workers)")
    workers: int = doc("worker processes")


@dataclass(frozen=True)
class PreparedFacts:
    """A prepared dataset: its format, its source, the bound it was prepared at, sizes before
    and after, the PSNR check and the preparation's cost."""

    format: str = doc("mindrecord | imagefolder")
    record: str = doc("the record inside the dataset's folder (train.mindrecord, or images/ "
                      "for an ImageFolder copy)")
    source_manifest: PreparedSource = doc("the dataset it was made from")
    settings: Settings = doc("the preparation's settings (perfstudy.data.prepare.Settings)")
    rule: str = doc("the bound in words")
    before: SizeBefore = doc("the source's images")
    after: SizeAfter = doc("the prepared images")
    psnr_db: PsnrCheck = doc("the re-encoding's PSNR against the full decode")
    preparation: PreparationCost = doc("what the preparation took")

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any], where: str = "a prepared manifest") -> PreparedFacts:
        """The record from a prepared dataset's manifest (perfstudy.data.prepare writes it)."""
        return from_dict(cls, {name: manifest.get(name) for name in _FIELDS},
                         where=where)


_FIELDS = ("format", "record", "source_manifest", "settings", "rule", "before", "after",
           "psnr_db", "preparation")
