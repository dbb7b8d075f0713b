"""A copy of the sample log's closed hours: its backup, and its restore the same way back.

A closed hour (ended ``grace`` ago: no cycle writes into it any more) holds files that are
never rewritten in place: micro-batches and compacted files are written under temporary names
and renamed, and a compaction writes its new file before it deletes its inputs. So a copy of
an hour taken file by file is whole: a compaction running meanwhile leaves, at worst, both its
inputs and its output in the copy, the same samples twice, which every reader deduplicates
(``SampleLog.read``, ``dedup``) and the next compaction of the copy merges. An input deleted
between the listing and its copy is skipped: its output is listed on the next pass.

The open hour is left out: it gains a micro-batch every poll and is compacted every minute, so
a copy of it is out of date at once. The next backup after it closes takes it whole
(docs/OPERATIONS.md, "Backup and restore").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow.fs as pafs

from collectors.sample_log.layout import HourPartition, to_ms
from collectors.sample_log.store import SampleLog

__all__ = ["CopyResult", "copy_hours"]

_CLOSED_GRACE = timedelta(minutes=5)  # as compact_closed_hours: a late cycle's write lands
_PASSES = 3  # listings of an hour whose files a compaction replaced during the copy


@dataclass
class CopyResult:
    """What a copy did: the hours it covered, files copied, files already there (same name
    and size), and the open hours it left out."""

    hours: list[HourPartition] = field(default_factory=list)
    copied: int = 0
    present: int = 0
    bytes: int = 0
    open_hours_left: list[HourPartition] = field(default_factory=list)


def copy_hours(
    source: SampleLog,
    target: SampleLog,
    now: datetime | int | None,
    grace: timedelta = _CLOSED_GRACE,
) -> CopyResult:
    """Copy every hour of ``source`` closed at ``now`` (ended ``grace`` before it; ``now``
    None: every hour, as a restore from a backup takes it) into ``target``, keeping the
    layout. A file ``target`` has already (same name and size) is not copied again, so a
    second backup into the same folder copies only what is new."""
    cutoff = None if now is None else to_ms(now) - grace // timedelta(milliseconds=1)
    result = CopyResult()
    for partition in source.hours():
        if cutoff is not None and partition.end_ms > cutoff:
            result.open_hours_left.append(partition)
            continue
        result.hours.append(partition)
        relative = partition.path[len(source.base) :].lstrip("/")
        _copy_hour(source, target, partition.path, f"{target.base}/{relative}", result)
    return result


def _copy_hour(
    source: SampleLog, target: SampleLog, src_dir: str, dst_dir: str, result: CopyResult
) -> None:
    target.fs.create_dir(dst_dir, recursive=True)
    have = {i.base_name: i.size for i in _files(target.fs, dst_dir)}
    for attempt in range(_PASSES):
        listing = _files(source.fs, src_dir)
        if attempt == 0:
            result.present += sum(1 for i in listing if have.get(i.base_name) == i.size)
        missing = [i for i in listing if have.get(i.base_name) != i.size]
        if not missing:
            return
        for info in missing:
            try:
                size = _copy_file(source.fs, info.path, target.fs, f"{dst_dir}/{info.base_name}")
            except FileNotFoundError:
                continue  # replaced by a compaction meanwhile: its output is on the next pass
            have[info.base_name] = size
            result.copied += 1
            result.bytes += size


def _files(fs: pafs.FileSystem, directory: str) -> list[pafs.FileInfo]:
    infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    return [
        i for i in infos
        if i.type == pafs.FileType.File and i.base_name.endswith(".parquet")
        and not i.base_name.startswith((".", "_"))
    ]  # fmt: skip


def _copy_file(src_fs: pafs.FileSystem, src: str, dst_fs: pafs.FileSystem, dst: str) -> int:
    """One file, written under a temporary name (skipped by every reader) and renamed."""
    folder, name = dst.rsplit("/", 1)
    temporary = f"{folder}/.{name}.copy"
    size = 0
    with src_fs.open_input_stream(src) as reader, dst_fs.open_output_stream(temporary) as writer:
        while chunk := reader.read(1 << 20):
            writer.write(chunk)
            size += len(chunk)
    dst_fs.move(temporary, dst)
    return size
