"""The four-phase usability study (paper 000): recording intake and QC, the pipeline, the analysis and its export."""
