from __future__ import annotations

import json

import pytest

from ctxkeeper.core.config import Config, default_document, parse_config
from ctxkeeper.core.errors import CorruptFileError, StoreError


def doc(**settings: object) -> bytes:
    return json.dumps({"version": 1, **settings}).encode()


class TestConfig:
    def test_absent_means_defaults(self) -> None:
        assert parse_config(None, "c") == Config()

    def test_default_document_round_trips(self) -> None:
        assert parse_config(json.dumps(default_document()).encode(), "c") == Config()

    def test_floors_can_be_raised(self) -> None:
        config = parse_config(doc(floors={"decision": {"why_chosen": 100}}, review="off"), "c")
        assert config.floors["decision"]["why_chosen"] == 100
        assert config.floors["decision"]["summary"] == 20
        assert config.review == "off"

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            pytest.param(b'{"version": 1,', "c:1:15", id="does-not-parse"),
            pytest.param(b"[1]", "is not a JSON object", id="not-object"),
            pytest.param(
                json.dumps({"review": "agent"}).encode(),
                "missing or non-integer 'version'",
                id="no-version",
            ),
            pytest.param(doc(version=2), "newer ctxkeeper", id="future-version"),
            pytest.param(doc(reveiw="off"), "unknown setting 'reveiw'", id="typo"),
            pytest.param(doc(review="sometimes"), "review must be one of", id="bad-review"),
            pytest.param(
                doc(hard_delivery="loud"), "hard_delivery must be one of", id="bad-delivery"
            ),
            pytest.param(
                doc(auto_export="yes"), "auto_export must be true or false", id="bad-export"
            ),
            pytest.param(doc(summary_budget=10), "summary_budget", id="tiny-budget"),
            pytest.param(doc(floors=[]), "floors must be an object", id="floors-list"),
            pytest.param(doc(floors={"memo": {}}), "floors.memo is not a kind", id="floors-kind"),
            pytest.param(doc(floors={"decision": {"title": 9}}), "not a floor", id="floors-field"),
            pytest.param(
                doc(floors={"decision": {"summary": "30"}}), "must be an integer", id="floors-type"
            ),
            pytest.param(
                doc(floors={"decision": {"summary": 10}}), "can only be raised", id="floors-lowered"
            ),
        ],
    )
    def test_bad_config_is_refused_with_the_key(self, data: bytes, message: str) -> None:
        with pytest.raises((StoreError, CorruptFileError), match=message):
            parse_config(data, "c")
