"""One report per study: each protocol's tables and figures in its paper's order, numbered and
captioned as the paper does, rendered to one self-contained HTML file (services.report.build)."""
