# Stage: the shipped metadata files (class lists, the NABirds tree), checked and copied into
# results/ with provenance, so every later artifact traces back to hashed inputs.

STAGED_INPUT = run_path(INPUT_FILE)


rule stage_input:
    input:
        shipped_input,
    output:
        STAGED_INPUT,
    log:
        log_for(STAGED_INPUT),
    params:
        **code("data.inputs", script="stage_input"),
        source=lambda wildcards: source_identity(shipped_input(wildcards)),
    conda:
        ENVIRONMENT
    script:
        SCRIPT
