"""Statistics shared by the estimators and reports: intervals and paired tests."""

from fairjudge.stats._bootstrap import Estimate, bootstrap_mean
from fairjudge.stats._intervals import Interval, normal_interval
from fairjudge.stats._tests import PairedTTest, mean_and_se, paired_t_test

__all__ = ["Estimate", "Interval", "bootstrap_mean", "PairedTTest", "mean_and_se", "normal_interval", "paired_t_test"]
