"""The paper's controls, each separate from the factorial: one module per control
(``curvature``, ``semantic``) and what they share (``common``)."""
