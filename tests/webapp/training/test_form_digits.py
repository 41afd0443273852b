"""The training form reads whole numbers as every form does: ASCII digits only (issue #22, finding 10).

The engine's ``int()`` alone would take "٢" (Arabic-Indic two) or "２" (fullwidth) as 2.
"""

from __future__ import annotations

import pytest

from tests.webapp.conftest import default_form
from webapp.training import form as training_form


@pytest.mark.parametrize("text", ["٢", "２", "2_000", "+2"])
def test_training_numbers_are_plain_ascii_digits(text: str) -> None:
    options, errors = training_form.parse("bpe", default_form("bpe", vocab_size="300", num_workers=text))
    assert options is None
    assert errors == {"num_workers": f"Num workers must be a whole number written with the digits 0 to 9, not {text!r}."}
    options, errors = training_form.parse("bpe", default_form("bpe", vocab_size="300", num_workers="2"))
    assert errors == {} and options["num_workers"] == 2
