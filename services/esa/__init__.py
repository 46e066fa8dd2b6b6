"""Error span annotation: ESA (Kocmi et al., WMT 2024), ESA-AI (Zouhar et al., NAACL 2025) and MQM
(Freitag et al., TACL 2021) share one span record, its checks, scoring, analysis and agreement.
Pure Python (no gradio, no database); docs/esa-mqm.md cites the source of each default."""
