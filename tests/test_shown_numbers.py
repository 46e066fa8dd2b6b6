"""Numbers as the Analysis tab and the report show them (services.common.analysis_output.rounded):
to the table's decimals, and a p-value that would round to zero as "<0.001", never "0.000" (no
test gives p = 0; APA style writes p < .001)."""

import pandas as pd

from services.common.analysis_output import is_p_value, rounded


def test_p_values_that_round_to_zero_read_below_the_last_place():
    t = pd.DataFrame(
        {
            "estimate": [0.0001, 1.23456],
            "p_value": [0.0004, 0.0421],
            "p_holm": [0.00049, 0.0005],
            "bartlett_p": [1e-12, float("nan")],
        }
    )
    shown = rounded(t, 3)
    assert shown["estimate"].tolist() == ["0.000", "1.235"]  # not a p-value: plain rounding
    assert shown["p_value"].tolist() == ["<0.001", "0.042"]
    assert shown["p_holm"].tolist() == ["<0.001", "0.001"]  # 0.0005 rounds up to 0.001 (f-format)
    assert shown["bartlett_p"].tolist() == ["<0.001", ""]
    assert rounded(pd.DataFrame({"p": [0.004]}), 2)["p"].tolist() == ["<0.01"]


def test_which_columns_are_p_values():
    assert all(map(is_p_value, ["p", "p_value", "p_holm", "p_lmm", "P_Low", "phi_p", "bartlett_p"]))
    assert not any(map(is_p_value, ["top_p", "spearman_rho", "pairs", "participant", "group"]))


def test_a_plain_text_summary_reads_as_paragraphs_and_bullets_in_the_tab():
    """Issue 28: the usability summary was one run-on paragraph in the Analysis tab (Markdown joins
    single newlines). Each line is a paragraph, each indented line a bullet."""
    from tabs.common import summary_markdown

    text = "12 exchanges, 3 senders\n  USW: n 4, mu(u) 3.10\n  USB: n 8, mu(u) 3.40\nLMM (REML, n 12)\n\n  note: x"
    assert summary_markdown(text) == (
        "12 exchanges, 3 senders\n- USW: n 4, mu(u) 3.10\n- USB: n 8, mu(u) 3.40\n\nLMM (REML, n 12)\n- note: x"
    )
