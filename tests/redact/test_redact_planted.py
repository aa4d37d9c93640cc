"""Planted secrets: a ``synth --secrets`` capture, every body and transcript line redacted,
every planted value gone by its rule and every near miss left alone; and the command."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from asz.redact import Policy, Redactor
from asz.redact.samples import sample_documents
from asz.synth import SynthOptions, synthesize

KEY = b"planted-test-key-planted"


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("secrets") / "claude"
    expected = synthesize(out, SynthOptions(sessions=2, turns=3, secrets=True))
    return out, expected


def _documents(out: Path, expected: dict) -> tuple[list[bytes], list[bytes]]:
    bodies = sorted(
        (out / expected["bodies_dir"]).glob("*.json"), key=lambda p: p.stat().st_mtime_ns
    )
    lines = [
        line
        for session in expected["sessions"]
        for path in session["transcripts"]
        for line in (out / path).read_bytes().splitlines()
        if line.strip()
    ]
    return [path.read_bytes() for path in bodies], lines


def test_every_planted_value_is_found_by_its_rule_and_every_near_miss_kept(capture) -> None:
    out, expected = capture
    bodies, lines = _documents(out, expected)
    redactor = Redactor(Policy(), KEY)
    redacted = [redactor.body(raw) for raw in bodies] + [redactor.line(raw) for raw in lines]
    fired = Counter(hit.rule for doc in redacted for hit in doc.hits)
    sources = b"\n".join(bodies + lines)
    written = b"\n".join(doc.data for doc in redacted)
    planted = [item for session in expected["sessions"] for item in session["planted"]]
    assert {item["kind"] for item in planted} >= {"private-key", "jwt", "uuid", "cc_prompt_id"}
    for item in planted:
        needle = item["needle"]
        forms = {needle.encode(), json.dumps(needle)[1:-1].encode()}
        assert any(form in sources for form in forms), f"{item['kind']} was not planted"
        if item["rule"] is None:
            assert any(form in written for form in forms), f"the near miss {item['kind']} went"
        else:
            assert not any(form in written for form in forms), f"{item['kind']} is still there"
            assert fired[item["rule"]] > 0, item["rule"]
    for doc in redacted:
        json.loads(doc.data)


def test_the_planted_values_are_in_bodies_and_in_transcripts(capture) -> None:
    out, expected = capture
    bodies, lines = _documents(out, expected)
    key = next(i for i in expected["sessions"][0]["planted"] if i["kind"] == "github-token")
    assert any(key["value"].encode() in raw for raw in bodies)
    assert any(key["value"].encode() in raw for raw in lines)


def test_a_redacted_body_is_redacted_the_same_again_and_its_markers_say_its_rules(capture) -> None:
    out, expected = capture
    bodies, _ = _documents(out, expected)
    first, second = Redactor(Policy(), KEY), Redactor(Policy(), KEY)
    for raw in bodies[:20]:
        once = first.body(raw)
        assert second.body(raw).data == once.data
        assert first.body(once.data).hits == ()
        for hit in once.hits:
            assert f"«redacted:{hit.rule}:".encode() in once.data


def test_the_real_samples_fire_no_secret_rule(samples: Path) -> None:
    """What docs/security.md states: on the real samples only identity rules fire (the
    user_id's device id, the names in home paths), never a secret rule."""
    redactor = Redactor(Policy(), KEY)
    fired: Counter[str] = Counter()
    for kind, _where, raw in sample_documents(samples):
        doc = redactor.body(raw) if kind == "body" else redactor.line(raw)
        fired.update(hit.rule for hit in doc.hits)
    assert fired["device-id"] > 0 and fired["user"] > 0
    assert set(fired) <= {"device-id", "account-id", "user", "email", "hostname"}, fired


@pytest.mark.slow
def test_redact_dry_run_and_show_name_rules_and_counts_never_values(
    run_asz, tmp_path: Path
) -> None:
    claude, root = tmp_path / "claude", tmp_path / "root"
    assert (
        run_asz("synth", str(claude), "--secrets", "--sessions", "1", "--turns", "3").returncode
        == 0
    )
    expected = json.loads((claude / "expected.json").read_text())
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    assert run_asz("collect", "--once", "--root", str(root), env=env).returncode == 0
    dry = run_asz("redact", "--dry-run", "--json", "--root", str(root), env=env)
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    (session,) = expected["sessions"]
    tally = report["sessions"][session["id"]]
    for item in session["planted"]:
        if item["rule"] is not None:
            assert tally["rules"].get(item["rule"], 0) > 0, item["rule"]
    text = run_asz("redact", "--dry-run", session["id"][:8], "--root", str(root), env=env)
    assert text.returncode == 0 and "markers in" in text.stdout.decode()
    shown = run_asz("redact", "--show", session["id"][:8], "--root", str(root), env=env)
    assert shown.returncode == 0 and "«redacted:github-token:" in shown.stdout.decode()
    for output in (dry.stdout, text.stdout, shown.stdout):
        for item in session["planted"]:
            if item["rule"] is not None:
                assert item["needle"].encode() not in output, item["kind"]
    assert not (root / "_state" / "redact.key").exists()


def test_redact_refuses_a_bad_policy_and_show_without_a_session(run_asz, tmp_path: Path) -> None:
    config = tmp_path / "asz.toml"
    config.write_text('[redact]\ndisable = ["aws"]\n')
    bad = run_asz("redact", "--dry-run", "--config", str(config), "--root", str(tmp_path))
    assert bad.returncode == 2
    assert "unknown rule 'aws'" in bad.stderr.decode()
    lone = run_asz("redact", "--show", "--root", str(tmp_path))
    assert lone.returncode == 2 and "--show needs" in lone.stderr.decode()


def _redacted_copy(source: Path, target: Path) -> None:
    """The capture with every body and transcript line redacted, at the same times, each
    file by a redactor of its own (as pushes in separate runs are): only the key keeps the
    markers of one value equal."""
    for path in sorted(source.rglob("*"), key=lambda p: p.stat().st_mtime_ns):
        if path.is_dir():
            continue
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        raw = path.read_bytes()
        redactor = Redactor(Policy(), KEY)
        if path.name.endswith((".request.json", ".response.json")):
            raw = redactor.body(raw).data
        elif path.suffix == ".jsonl":
            raw = b"".join(
                redactor.line(line.rstrip(b"\n")).data + b"\n"
                for line in raw.splitlines(keepends=True)
            )
        out.write_bytes(raw)
        stat = path.stat()
        os.utime(out, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.slow
def test_the_cache_report_of_a_redacted_capture_is_the_same_report(
    run_asz, capture, tmp_path
) -> None:
    """Equal values give equal markers, so a redacted body compares with the one before it
    as the original did: same calls, breaks, causes, tokens and money; only the project's
    path shows the user's name as a marker."""
    out, expected = capture
    _redacted_copy(out, tmp_path / "redacted")
    reports = []
    for name, claude in (("raw", out), ("redacted", tmp_path / "redacted")):
        env = {"CLAUDE_CONFIG_DIR": str(claude)}
        root = str(tmp_path / f"root-{name}")
        assert run_asz("collect", "--once", "--root", root, env=env).returncode == 0
        ranked = json.loads(run_asz("cache", "--json", "--root", root).stdout)
        sessions = [
            json.loads(run_asz("cache", s["id"], "--json", "--root", root).stdout)
            for s in expected["sessions"]
        ]
        reports.append((ranked, sessions))
    (raw_ranked, raw_sessions), (red_ranked, red_sessions) = reports
    assert red_sessions == raw_sessions
    assert len(raw_ranked) == len(red_ranked) == len(expected["sessions"])
    for before, after in zip(raw_ranked, red_ranked, strict=True):
        assert after.pop("project").startswith(("/home/«redacted:user:", "/Users/«redacted:user:"))
        before.pop("project")
        assert after == before
        assert before["breaks"] > 0
