"""The search of kernel and bandwidth: the search over a problem record, the
passes that score candidates, the grid, the criteria and scores, the
coordinate search and polish, the default bandwidth, and what sample
weights mean there."""
