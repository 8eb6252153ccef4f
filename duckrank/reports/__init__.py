"""User-facing reports on top of the evaluation: comparisons of systems with significance marks,
plots, trec_eval's output, and the xCLiMF paper's experiment."""
