"""The results lifecycle: the results contract, verification, paired comparisons, rankings and reports."""
