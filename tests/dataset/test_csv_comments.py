"""`#` comment lines above a CSV/TSV header: skipped with a note, never advice to read without a header."""

from __future__ import annotations

from pathlib import Path

import pytest

from abbench.dataset import read_table, suggest_mapping

# as issue 41's aspect-sentiment TSV: notes about the corpus above the header
COMMENTED = (
    "# Aspect-based sentiment, restaurant reviews: 4 pairs of 3 sentences\n"
    '# columns:\t"pair_id, sentence_no, review_sentence, aspect_category, polarity; 1 2 3\n'  # a quote opens no cell
    "# licence: CC BY 4.0\n"
    "pair_id\tsentence_no\treview_sentence\taspect_category\tpolarity\n"
    "t1-food\t1\tThe food was good, but the service was slow.\tfood\tpositive\n"
    "t1-service\t1\tThe food was good, but the service was slow.\tservice\tnegative\n"
    't2-staff\t2\tWaiter took our "drink" order and then vanished.\tstaff\tnegative\n'
    "t3-price\t3\tPrices are fair for the portion size.\tprice\tpositive\n"
)


def _rows(table):
    return [list(r) for chunk in table.chunks(100) for r in chunk.rows]


def test_leading_comment_lines_are_skipped_with_a_note(tmp_path):
    path = tmp_path / "absa.tsv"
    path.write_text(COMMENTED, encoding="utf-8")
    table = read_table(path)
    assert table.columns == ("pair_id", "sentence_no", "review_sentence", "aspect_category", "polarity")
    assert [r[0] for r in _rows(table)] == ["t1-food", "t1-service", "t2-staff", "t3-price"]
    assert table.options["header_row"] == 4 and table.options["delimiter"] == "\t"
    assert any(
        n.startswith("lines 1–3 start with '#' and read as comments above the header: skipped")
        for n in table.notes
    )
    assert not any("header_row=0" in n for n in table.notes)  # the wrong advice of issue 41
    chunk = next(table.chunks(100))
    assert chunk.locations[0] == "line 5"
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["input"] == "review_sentence"


def test_the_header_row_found_reads_the_same_when_given(tmp_path):
    """The header row kept in the read options reads the file again the same way (a re-import)."""
    path = tmp_path / "absa.tsv"
    path.write_text(COMMENTED, encoding="utf-8")
    given = read_table(path, header_row=4)
    assert given.columns == read_table(path).columns
    assert _rows(given) == _rows(read_table(path))
    assert not any("comments" in n for n in given.notes)


def test_a_header_starting_with_hash_is_the_header(tmp_path):
    """``#id<TAB>text`` has the width of the rows: it is the header (as VCF's ``#CHROM`` line), not a comment."""
    path = tmp_path / "h.tsv"
    path.write_text(
        "## made by hand\n#id\ttext\n1\thello there friend\n2\tgood morning to you\n", encoding="utf-8"
    )
    table = read_table(path)
    assert table.columns == ("#id", "text")
    assert len(_rows(table)) == 2
    assert any(n.startswith("line 1 starts with '#'") for n in table.notes)


@pytest.mark.parametrize("text", ["id,text\n1,#1 pizza in town\n2,# not a comment here\n"])
def test_hash_lines_below_the_header_are_data(tmp_path, text):
    path = tmp_path / "tags.csv"
    path.write_text(text, encoding="utf-8")
    table = read_table(path)
    assert [r[1] for r in _rows(table)] == ["#1 pizza in town", "# not a comment here"]
    assert not any("comments" in n for n in table.notes)


def test_import_of_a_commented_tsv_stores_the_cases(cli, tmp_path):
    path = tmp_path / "absa.tsv"
    path.write_text(COMMENTED, encoding="utf-8")
    result = cli("import", path)
    assert result.exit_code == 0, result.output
    assert "header row 4" in result.output
    assert "(4 cases from absa.tsv)" in result.output


GEONAMES = Path(__file__).parents[1] / "realdata" / "geonames" / "countryInfo.txt"


def test_real_commented_tsv_geonames(tmp_path):
    """GeoNames' countryInfo.txt: 50 `#` lines padded with tabs to the rows' width, then a `#ISO` header."""
    table = read_table(GEONAMES)
    assert table.options["delimiter"] == "\t" and table.options["header_row"] == 51
    assert table.columns[:5] == ("#ISO", "ISO3", "ISO-Numeric", "fips", "Country")
    assert len(table.columns) == 19
    rows = _rows(table)
    assert len(rows) == 252 and rows[0][4] == "Andorra" and rows[-1][4] == "Netherlands Antilles"
    assert any(n.startswith("lines 1–50 start with '#'") for n in table.notes)
    assert not any("header_row=0" in n for n in table.notes)
    suggestion = suggest_mapping(table)
    assert suggestion.profile.fields["input"] == "Country"
    assert "domain" not in suggestion.profile.fields  # 'Area(in sq km)' is named like a domain: numbers
