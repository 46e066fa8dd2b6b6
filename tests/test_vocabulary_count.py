"""One rater, two raters (issue 51, small: "1 raters", "1 participants", "1 translations")."""

from services.common.vocabulary import count


def test_a_count_takes_its_noun_in_the_right_number():
    assert [count(n, "rater") for n in (0, 1, 2)] == ["0 raters", "1 rater", "2 raters"]
    assert count(1, "person", "people") == "1 person" and count(3, "person", "people") == "3 people"
