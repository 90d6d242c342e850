"""The local fits: Nadaraya--Watson's local-constant fits live with the
regressors; here the local polynomial fits over the fitted smoother, their
frames and solves, the fast paths of one feature, the passes of their
search, the gradient, the standard errors and the robustness iterations."""
