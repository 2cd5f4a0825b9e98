"""A derived dataset that decodes less: every image of a source dataset (generated or a user's
ImageFolder) re-encoded as JPEG at a bounded resolution, in one MindRecord file (what the case
study's pipeline reads) or as an ImageFolder of the same relative paths (what any pipeline
factory reads: it gets the folder as its `root`).

The bound, by default, is per image the smallest short side at which the augmentation's
smallest crop is not upsampled: RandomCropDecodeResize takes a crop of area fraction
s in [scale_min, 1] and aspect ratio r in [r0, r1] and resizes it to image_size, so the
crop's shorter side is at least sqrt(s_min * A) * min(sqrt(r0), 1/sqrt(r1)) for an image of
area A. For a 4:3 photo trained at 32 px that is a 114 px short side (0.017 MP instead of
16 MP). Crops then see fewer source pixels but never fewer than the network's input.

Rows are written in ImageFolderDataset's order (sorted class folders, then sorted file
names), so a MindDataset read with the same sampler and seed yields the same images and
labels in the same order as the source; the ImageFolder copy keeps every file's relative path,
so ImageFolderDataset reads it in the source's order by construction.

The default bound assumes ImageNet's random-resized crop (area >= 0.08, ratio 0.75..1.333), as
the case study's RandomCropDecodeResize and mindcv's recipe use; a pipeline that crops less
deeply needs data.prepared_short_side.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import resource
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from perfstudy.common.config_schema import PipelineConfig
from perfstudy.common.records import doc
from perfstudy.data.dataset import (
    MANIFEST,
    DatasetError,
    _sha256_file,
    dataset_dir,
    load_manifest,
    verify_manifest,
    write_manifest,
)

RECORD = "train.mindrecord"
IMAGES = "images"  # the ImageFolder copy's folder inside a prepared dataset
FORMATS = ("mindrecord", "imagefolder")
PREFIX = "prepared-"  # prepared datasets' folders under data_root start with this
# RandomCropDecodeResize's parameters in the article's pipeline (pipeline.train_transforms).
CROP_SCALE = (0.08, 1.0)
CROP_RATIO = (0.75, 1.333)
SCHEMA = {"image": {"type": "bytes"}, "label": {"type": "int32"}, "path": {"type": "string"}}
PSNR_SAMPLE = 8  # images whose re-encoding is checked against a resize of the full decode


@dataclass(frozen=True)
class Settings:
    """Everything that determines the prepared bytes (recorded in the manifest)."""

    image_size: int = doc("the network's input side in px (the crop's output)")
    short_side: Optional[int] = doc("a fixed short side in px; None: per image, the smallest at "
                                    "which no random crop is upsampled")
    quality: int = doc("JPEG quality of the re-encoded images")
    format: str = doc("mindrecord | imagefolder", "mindrecord")
    scale_min: float = doc("the random crop's smallest area share", CROP_SCALE[0])
    ratio_min: float = doc("the random crop's smallest aspect ratio", CROP_RATIO[0])
    ratio_max: float = doc("the random crop's largest aspect ratio", CROP_RATIO[1])

    @classmethod
    def from_config(cls, cfg) -> Settings:
        """From a run config (data.prepared_* and the pipeline's input size). The format: a
        MindRecord for the case study's own pipeline, an ImageFolder for any other factory
        (data.prepared_format sets it)."""
        fmt = cfg.data.prepared_format or (
            "mindrecord" if cfg.pipeline._target_ == PipelineConfig._target_ else "imagefolder")
        return cls(int(cfg.pipeline.image_size), cfg.data.prepared_short_side,
                   int(cfg.data.prepared_quality), str(fmt))

    def tag(self) -> str:
        """Short name of the settings, for the folder name."""
        side = f"side{self.short_side}" if self.short_side else f"crop{self.image_size}"
        return f"{side}-q{self.quality}" + ("-folder" if self.format == "imagefolder" else "")

    def rule(self) -> str:
        """The bound in words, for the manifest and the report."""
        if self.short_side:
            return f"short side {self.short_side} px (never upsampled)"
        return (f"each image's short side cut to the smallest at which no random crop (area >= "
                f"{self.scale_min:g}, ratio {self.ratio_min:g}..{self.ratio_max:g}) is upsampled to "
                f"{self.image_size} px")


def crop_bound_side(image_size: int, aspect: float, scale_min: float = CROP_SCALE[0],
                    ratio: tuple[float, float] = CROP_RATIO) -> int:
    """Smallest short side of an image of `aspect` (long/short >= 1) at which every random crop
    is at least image_size px on its shorter side."""
    shrink = math.sqrt(scale_min * max(aspect, 1.0)) * min(math.sqrt(ratio[0]),
                                                           1 / math.sqrt(ratio[1]))
    return math.ceil(image_size / shrink - 1e-9)


def target_size(width: int, height: int, settings: Settings) -> tuple[int, int]:
    """The prepared image's size: short side at the bound, aspect kept, never larger."""
    short, long_ = min(width, height), max(width, height)
    side = settings.short_side or crop_bound_side(
        settings.image_size, long_ / short, settings.scale_min,
        (settings.ratio_min, settings.ratio_max))
    if side >= short:
        return width, height
    scale = side / short
    if width <= height:
        return side, max(side, round(height * scale))
    return max(side, round(width * scale)), side


def bounded_megapixels(sizes: list[tuple[int, int]], settings: Settings) -> Optional[float]:
    """Mean megapixels of images of these (width, height) once prepared."""
    if not sizes:
        return None
    return float(np.mean([np.prod(target_size(w, h, settings)) / 1e6 for w, h in sizes]))


def prepared_dir(data_cfg, settings: Settings, data_root: str | Path) -> Path:
    """The prepared dataset's own folder under data_root (beside its source's)."""
    return Path(data_root) / f"{PREFIX}{dataset_dir(data_cfg, data_root).name}-{settings.tag()}"


def _resize(image, size: tuple[int, int]):
    from PIL import Image

    return image.convert("RGB").resize(size, Image.Resampling.LANCZOS)


def _reencode(source, settings: Settings) -> dict[str, Any]:
    """Decode one JPEG (a path or a file object) at reduced DCT scale where possible, resize to
    the bound, re-encode."""
    from PIL import Image

    with Image.open(source) as image:
        width, height = image.size
        size = target_size(width, height, settings)
        if size != (width, height):
            image.draft("RGB", size)  # libjpeg decodes at 1/2, 1/4, 1/8 scale: never below size
        resized = _resize(image, size)
    buffer = io.BytesIO()
    resized.save(buffer, format="JPEG", quality=settings.quality)
    return {"blob": buffer.getvalue(), "width": width, "height": height,
            "out_width": size[0], "out_height": size[1]}


def _prepare_one(job: tuple[str, Settings]) -> dict[str, Any]:
    """One source file prepared (its bytes re-encoded at the bound, and its size)."""
    path, settings = job
    return {**_reencode(path, settings), "bytes": os.path.getsize(path)}


def prepare_bytes(blob: bytes, settings: Settings) -> tuple[bytes, float, float]:
    """One encoded image prepared in memory as the prepared copy prepares its file: (the
    prepared bytes, megapixels before, after). An image within the bound comes back re-encoded
    at its own size, as the copy stores it."""
    done = _reencode(io.BytesIO(blob), settings)
    return (done["blob"], done["width"] * done["height"] / 1e6,
            done["out_width"] * done["out_height"] / 1e6)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB of two uint8 images of one shape."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def reference_psnr(source: str | Path, blob: bytes) -> float:
    """PSNR of a prepared image against the full decode of its source, resized the same way."""
    from PIL import Image

    with Image.open(io.BytesIO(blob)) as prepared:
        got = np.asarray(prepared.convert("RGB"))
    with Image.open(source) as image:
        image.load()
        want = np.asarray(_resize(image, (got.shape[1], got.shape[0])))
    return psnr(want, got)


def manifest_sha256(path: str | Path) -> str:
    """The identity of a source manifest (its bytes)."""
    return _sha256_file(Path(path))


def _cpu_seconds() -> float:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _check_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise DatasetError(f"Cannot write the prepared dataset under {folder} ({exc.strerror}); "
                           "make paths.data_root writable or point it elsewhere.") from None


def _pow2(value: int, low: int, high: int) -> int:
    """The power of two at or above value, within [low, high]."""
    return min(max(1 << max(int(value) - 1, 1).bit_length(), low), high)


def _write_record(folder: Path, rows: list[dict[str, Any]]) -> None:
    from mindspore.mindrecord import FileWriter

    writer = FileWriter(str(folder / RECORD), shard_num=1, overwrite=True)
    # MindRecord pads every page to its size (32 MB by default): pages sized to the data keep a
    # 2 MB dataset a 2 MB file; the header grows with the number of pages.
    blobs = [len(row["image"]) for row in rows]
    page = _pow2(max(4 * max(blobs), sum(blobs) // 256), 1 << 15, 1 << 28)
    writer.set_page_size(page)
    writer.set_header_size(_pow2(64 * (sum(blobs) // page + 8) * 16, 1 << 14, 1 << 27))
    writer.add_schema(SCHEMA, "perfstudy prepared images")
    for start in range(0, len(rows), 64):
        writer.write_raw_data(rows[start:start + 64])
    writer.commit()


def _write_folder(folder: Path, rows: list[dict[str, Any]]) -> None:
    """The re-encoded images as an ImageFolder: each at its source's relative path."""
    for row in rows:
        path = folder / IMAGES / row["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(row["image"])


def _stored(out: Path, settings: Settings) -> Path:
    """What a prepared dataset stores its images in: the record file, or the folder."""
    return out / (IMAGES if settings.format == "imagefolder" else RECORD)


def _reusable(out: Path, source_sha: str, settings: Settings) -> bool:
    """A prepared folder already made from the same source manifest with the same settings."""
    try:
        recorded = json.loads((out / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return (recorded.get("source_manifest", {}).get("sha256") == source_sha
            and recorded.get("settings") == asdict(settings) and _stored(out, settings).exists())


def _prepared_manifest(source: dict[str, Any], source_manifest_path: str | Path, source_sha: str,
                       settings: Settings, out: Path, staging: Path, entries: list, jobs: list,
                       done: list, rows: list, preparation: dict[str, Any]) -> dict[str, Any]:
    """The prepared dataset's manifest: what it was made from and with, sizes before and after,
    the PSNR of a sample against the full decode, every file."""
    root = Path(source["root"])
    picks = sorted({round(i * (len(done) - 1) / max(PSNR_SAMPLE - 1, 1))
                    for i in range(min(PSNR_SAMPLE, len(done)))})
    scores = [reference_psnr(jobs[i][0], done[i]["blob"]) for i in picks]
    before_mp = [item["width"] * item["height"] / 1e6 for item in done]
    after_mp = [item["out_width"] * item["out_height"] / 1e6 for item in done]
    sides = [min(item["out_width"], item["out_height"]) for item in done]
    record_bytes = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
    folder = settings.format == "imagefolder"
    manifest = {
        "source": "prepared",
        "format": settings.format,
        "root": str(out.resolve()),
        "record": IMAGES if folder else RECORD,
        "record_sha256": None if folder else _sha256_file(staging / RECORD),
        "num_images": len(rows),
        "num_classes": source["num_classes"],
        "classes": source["classes"],
        "total_bytes": record_bytes,
        "dataset_sha256": rows_sha256([(r["path"], r["image"]) for r in rows]),
        "mean_megapixels": float(np.mean(after_mp)),
        "source_manifest": {"path": str(Path(source_manifest_path).resolve()), "sha256": source_sha,
                            "dataset_sha256": source["dataset_sha256"], "root": str(root),
                            "source": source["source"]},
        "settings": asdict(settings),
        "rule": settings.rule(),
        "order": "ImageFolderDataset's: sorted class folders, then sorted file names",
        "before": {"bytes": sum(item["bytes"] for item in done),
                   "mean_megapixels": float(np.mean(before_mp)),
                   "total_megapixels": float(np.sum(before_mp))},
        "after": {"bytes": sum(len(item["blob"]) for item in done), "record_bytes": record_bytes,
                  "mean_megapixels": float(np.mean(after_mp)),
                  "total_megapixels": float(np.sum(after_mp)),
                  "short_side_min": int(min(sides)), "short_side_max": int(max(sides))},
        "psnr_db": {"images": len(scores), "min": float(min(scores)),
                    "mean": float(np.mean(scores)),
                    "against": "the source decoded in full, resized (Lanczos) to the same size"},
        "preparation": preparation,
        "files": [{"path": entry["path"], "label": row["label"], "bytes": len(row["image"]),
                   "width": item["out_width"], "height": item["out_height"]}
                  for entry, row, item in zip(entries, rows, done, strict=True)],
    }
    return manifest


def prepare(source_manifest_path: str | Path, settings: Settings, out_dir: str | Path,
            workers: int = 1) -> Path:
    """Write the prepared MindRecord (or ImageFolder) and its manifest.json under out_dir; return the manifest
    path. A folder whose manifest records the same source manifest and settings is reused."""
    out = Path(out_dir)
    source = load_manifest(source_manifest_path)
    verify_manifest(source)  # a changed source file is reported, never prepared (or reused)
    source_sha = manifest_sha256(source_manifest_path)
    existing = out / MANIFEST
    if _reusable(out, source_sha, settings):
        return existing
    _check_writable(out.parent)
    root = Path(source["root"])
    label_of = {name: index for index, name in enumerate(source["classes"])}
    entries = sorted(source["files"], key=lambda e: (label_of[e["path"].split("/")[0]],
                                                     e["path"].split("/")[1]))
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    jobs = [(str(root / entry["path"]), settings) for entry in entries]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(_prepare_one, jobs, chunksize=4))
    else:
        done = [_prepare_one(job) for job in jobs]
    rows = [{"image": item["blob"], "label": label_of[entry["path"].split("/")[0]],
             "path": entry["path"]} for entry, item in zip(entries, done, strict=True)]
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if settings.format == "imagefolder":
        _write_folder(staging, rows)
    else:
        _write_record(staging, rows)
    wall, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_started
    manifest = _prepared_manifest(source, source_manifest_path, source_sha, settings, out, staging,
                                  entries, jobs, done, rows, {"wall_s": wall, "cpu_s": cpu,
                                                              "workers": workers})
    write_manifest(manifest, staging)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(staging, out)
    return existing


def record_path(manifest: dict[str, Any]) -> str:
    """What a prepared manifest's pipeline reads: its MindRecord file, or its ImageFolder."""
    return str(Path(manifest["root"]) / manifest["record"])


def rows_sha256(items: list[tuple[str, bytes]]) -> str:
    """The identity of a prepared dataset's images: each relative path with its bytes' sha256."""
    return hashlib.sha256("".join(f"{path}\t{hashlib.sha256(blob).hexdigest()}\n"
                                  for path, blob in items).encode()).hexdigest()


def _verify_folder(manifest: dict[str, Any]) -> None:
    folder = Path(record_path(manifest))
    fix = f"delete {folder.parent} and run again to re-prepare it"
    items = []
    for entry in manifest["files"]:
        path = folder / entry["path"]
        if not path.is_file():
            raise DatasetError(f"The prepared image {entry['path']} is missing from {folder}; "
                               f"{fix}.")
        items.append((entry["path"], path.read_bytes()))
    if rows_sha256(items) != manifest.get("dataset_sha256"):
        raise DatasetError(f"The prepared images under {folder} changed (their sha256 differs "
                           f"from the manifest's); {fix}.")


def verify(manifest: dict[str, Any]) -> None:
    """Check the prepared images are the ones prepared (sha256); one sentence otherwise."""
    if manifest.get("format") == "imagefolder":
        _verify_folder(manifest)
        return
    path = Path(record_path(manifest))
    fix = f"delete {path.parent} and run again to re-prepare it"
    for file in (path, path.with_name(path.name + ".db")):
        if not file.is_file():
            raise DatasetError(f"The prepared dataset's {file.name} is missing from {path.parent}; "
                               f"{fix}.")
    if _sha256_file(path) != manifest.get("record_sha256"):
        raise DatasetError(f"The prepared MindRecord {path} is corrupt or changed (its sha256 "
                           f"differs from the manifest's); {fix}.")
