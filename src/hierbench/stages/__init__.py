"""One module per pipeline stage: compute with the library, then publish the artifacts.

Rules (through workflow_scripts/) and the `hierbench` command call these same functions.
"""
