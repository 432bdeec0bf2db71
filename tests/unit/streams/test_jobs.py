"""Backfill jobs without a server: what the capture reports moves PENDING/ACTIVE jobs (a
report older than the job's start does not, a STOPPED job stays), each change is in the
stream's history, and a deleted stream's jobs go with it."""

from __future__ import annotations

from pathlib import Path

from headwater.streams.catalog import Catalog
from headwater.streams.jobs import MANUAL, BackfillJob, BackfillJobs, JobState
from headwater.streams.model import ObjectRef, StreamSpec
from headwater.streams.profiles import destination_profile, source_profile
from headwater.streams.supervisor import Supervisor


def _catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(tmp_path / "data")
    cat.add_profile(source_profile("pg", "postgresql", {
        "database.hostname": "h", "database.user": "u", "database.dbname": "d"}))
    cat.add_profile(destination_profile("out", "topics", str(tmp_path / "t")))
    cat.create_stream(StreamSpec("s", "pg", "out"))
    return cat


def test_follow_and_forget(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    jobs = BackfillJobs(cat)
    jobs._put("s", BackfillJob("public.a", JobState.PENDING, MANUAL, None, 1000, None, []))
    jobs._put("s", BackfillJob("public.b", JobState.STOPPED, MANUAL, None, 1000, 2000, []))
    jobs._put("s", BackfillJob("public.c", JobState.PENDING, MANUAL, None, 5000, None, []))
    assert jobs.job("s", ObjectRef("public", "z")).state is JobState.NOT_STARTED

    jobs.follow("s", {"public.a": ("ACTIVE", 1500, ""), "public.b": ("COMPLETED", 2500, ""),
                      "public.c": ("COMPLETED", 4000, "")})  # c's report predates its start
    state = {j.obj: j.state for j in jobs.jobs("s")}
    assert state == {"public.a": JobState.ACTIVE, "public.b": JobState.STOPPED,
                     "public.c": JobState.PENDING}
    jobs.follow("s", {"public.a": ("FAILED", 1600, "table gone")})
    a = jobs.job("s", ObjectRef("public", "a"))
    assert a.state is JobState.FAILED and a.last_end_ms == 1600
    assert a.errors[0]["message"] == "table gone" and a.errors[0]["reason"] == "BACKFILL_FAILED"
    trail = [(h["from"], h["to"]) for h in cat.history("s") if h["detail"] == "public.a"]
    assert trail == [("NOT_STARTED", "PENDING"), ("PENDING", "ACTIVE"), ("ACTIVE", "FAILED")]

    Supervisor(cat).delete("s")
    cat.create_stream(StreamSpec("s", "pg", "out"))
    assert jobs.jobs("s") == []
