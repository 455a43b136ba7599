"""Tests of abbench.stats, cross-checked against statsmodels, scipy and scikit-learn."""
