"""Merging vocabularies the merge_tokenizers.py way (engine/extend/merge.py, ``tokenforge merge``):
the appended pieces are exactly the donor's that the base lacks, the base's ids and scores stay,
the result gives sentencepiece's and Hugging Face's ids, unreachable pieces are counted, the costs
of each policy are measured before anything is written, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import ConfigError
from engine.extend import build_report
from engine.extend.merge import POLICIES, donor_pieces, merge_vocabularies
from engine.formats.spm_model import dump_spm_model, load_spm_model
from engine.tokenizer import Tokenizer
from engine.trainers import train
from engine.vocab_diff import diff
from tests.engine.spm_samples import EN, chinese, english, lines, train_spm

spm = pytest.importorskip("sentencepiece")
hf = pytest.importorskip("tokenizers")

@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """sentencepiece models: English bases (BPE and Unigram) and Chinese donors."""
    folder = tmp_path_factory.mktemp("merge")
    # The donor's corpus holds some English too, as Chinese corpora do: pieces that compete with the base's.
    zh = chinese(3000, 2) + lines(EN, 300, 6, "")
    return {"en_bpe": train_spm(folder, "en_bpe", english(3000, 1), model_type="bpe", vocab_size=330, byte_fallback=True),
            "en_uni": train_spm(folder, "en_uni", english(3000, 1), model_type="unigram", vocab_size=290,
                                byte_fallback=True),
            "zh_bpe": train_spm(folder, "zh_bpe", zh, model_type="bpe", vocab_size=150),
            "zh_uni": train_spm(folder, "zh_uni", zh, model_type="unigram", vocab_size=150)}


def held_out() -> list[str]:
    return english(200, 3) + chinese(200, 4) + ["人工智能是计算机科学、心理学、哲学等学科融合的交叉学科。"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("base_name", "donor_name"), [("en_bpe", "zh_bpe"), ("en_uni", "zh_uni"),
                                                       ("en_bpe", "zh_uni")])
def test_a_model_merge_appends_the_missing_pieces_and_sentencepiece_agrees(
        models: dict[str, bytes], base_name: str, donor_name: str, policy: str) -> None:
    base, donor = load_spm_model(models[base_name]), load_spm_model(models[donor_name])
    merged = merge_vocabularies(base, donor, policy=policy)
    have = {base.id_to_token(i) for i in range(base.vocab_size)}
    expected = [p for p in donor_pieces(donor) if p not in have]
    assert [data.decode() for _, data in merged.added] == expected and expected
    assert merged.duplicates_skipped == len(donor_pieces(donor)) - len(expected)
    pieces = merged.tokenizer.model.pieces()
    assert pieces[:base.vocab_size] == base.model.pieces()  # the base's ids and scores
    scores = [s for _, s in pieces[base.vocab_size:]]
    lowest = min(s for p, s in base.model.pieces()[3:] if not p.startswith("<0x"))
    if policy == "zero":
        assert set(scores) == {0.0}
    elif base_name == "en_uni":
        assert set(scores) == {lowest}
    else:
        assert scores == [lowest - 1 - i for i in range(len(scores))]
    data = dump_spm_model(merged.tokenizer)
    reference = spm.SentencePieceProcessor(model_proto=data)
    assert reference.get_piece_size() == merged.tokenizer.vocab_size
    for line in held_out():
        assert merged.tokenizer.encode_ordinary(line) == reference.encode(line), line
    assert dump_spm_model(load_spm_model(data)) == data  # import then export
    vocab = diff(base, merged.tokenizer)
    assert vocab.only_a_count == 0 and vocab.only_b_count == len(expected)


def test_the_policies_cost_what_they_say(models: dict[str, bytes]) -> None:
    """Score 0 lets the donor's pieces win over the base's merges; "after" keeps the base's first."""
    base, donor = load_spm_model(models["en_bpe"]), load_spm_model(models["zh_bpe"])
    reports = {policy: build_report(merge_vocabularies(base, donor, policy=policy), base,
                                    reference="\n".join(english(200, 3)), held_out="\n".join(chinese(200, 4)))
               for policy in POLICIES}
    assert reports["after"]["reference"]["lines_changed"] < reports["zero"]["reference"]["lines_changed"]
    for report in reports.values():
        assert report["held_out"]["tokens_per_char_after"] < 0.6 * report["held_out"]["tokens_per_char_before"]


@pytest.mark.parametrize("policy", POLICIES)
def test_a_tokenizer_json_bpe_base_gets_merges_that_hugging_face_follows(models: dict[str, bytes], policy: str) -> None:
    base = Tokenizer.from_json(load_spm_model(models["en_bpe"]).to_json())  # Llama 2's kind of file
    assert base.model.level == "char"
    donor = load_spm_model(models["zh_uni"])
    merged = merge_vocabularies(base, donor, policy=policy)
    document = merged.tokenizer.to_json()
    reference = hf.Tokenizer.from_str(document)
    for line in held_out():
        assert merged.tokenizer.encode(line, add_special_tokens=False) == reference.encode(
            line, add_special_tokens=False).ids, line
        assert merged.tokenizer.decode(merged.tokenizer.encode(line, add_special_tokens=False)) == line
    merges = json.loads(document)["model"]["merges"]
    base_merges = json.loads(base.to_json())["model"]["merges"]
    new_count = len(merges) - len(base_merges)
    assert new_count > 0
    assert (merges[new_count:] if policy == "zero" else merges[:len(base_merges)]) == base_merges
    # A piece no two pieces of the merged vocabulary make is kept and counted, as the script keeps it.
    unreached = [merged.tokenizer.id_to_token(i) for i in range(base.vocab_size, merged.tokenizer.vocab_size)
                 if merged.tokenizer.model.tokenize(merged.tokenizer.id_to_token(i) or "") != [i]]
    assert merged.unreachable == len(unreached) > 0


def test_refusals(models: dict[str, bytes], tmp_path: Path) -> None:
    base = load_spm_model(models["en_bpe"])
    with pytest.raises(ConfigError, match="no piece the base lacks"):
        merge_vocabularies(base, base)
    with pytest.raises(ConfigError, match="policy='first' is not one of zero, after"):
        merge_vocabularies(base, load_spm_model(models["zh_bpe"]), policy="first")
    with pytest.raises(ConfigError, match=r"The donor has [\d,]+ pieces the base lacks; at most 10 may be") as bounded:
        merge_vocabularies(base, load_spm_model(models["zh_bpe"]), most=10)
    assert bounded.value.most == 10 and bounded.value.value > 10
    corpus = tmp_path / "en.txt"
    corpus.write_text("\n".join(english(300, 5)), encoding="utf-8")
    byte_level = train("bpe", [corpus], {"vocab_size": 300}).tokenizer
    with pytest.raises(ConfigError, match="The base is a byte-level bpe tokenizer; merging vocabularies supports"):
        merge_vocabularies(byte_level, base)
    wordpiece = train("wordpiece", [corpus], {"vocab_size": 200}).tokenizer
    with pytest.raises(ConfigError, match="The donor is a wordpiece tokenizer"):
        merge_vocabularies(base, wordpiece)


def test_cli_prints_the_costs_first_and_writes_only_with_o(models: dict[str, bytes], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("en_bpe", "zh_bpe"):
        (tmp_path / f"{name}.model").write_bytes(models[name])
    (tmp_path / "en.txt").write_text("\n".join(english(100, 3)), encoding="utf-8")
    args = ["merge", "-t", str(tmp_path / "en_bpe.model"), "--donor", str(tmp_path / "zh_bpe.model"),
            "--reference", str(tmp_path / "en.txt")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("zero: appends ") and "\nafter: appends " in out and "Nothing written" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["en.txt", "en_bpe.model", "zh_bpe.model"]
    assert main([*args, "--policy", "after", "-o", str(tmp_path / "out")]) == 0
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == ["report.json", "tokenizer.json", "tokenizer.model", "tokenizer_config.json"]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["policy"] == "after" and report["reference"]["lines"] == 100
    reference = spm.SentencePieceProcessor(model_file=str(tmp_path / "out" / "tokenizer.model"))
    assert reference.get_piece_size() == report["vocab_size"]


def test_the_cli_names_the_engines_policies() -> None:
    from engine.cli_merge import POLICY_HELP

    assert tuple(POLICY_HELP) == POLICIES
