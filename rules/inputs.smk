# Stage: the shipped metadata files (class lists, the NABirds tree), checked and copied into
# results/ with provenance, so every later artifact traces back to hashed inputs.


rule stage_input:
    input:
        shipped_input,
    output:
        f"{RESULTS}/{{dataset}}/inputs/{{name}}.txt",
    log:
        log_for(f"{RESULTS}/{{dataset}}/inputs/{{name}}.txt"),
    params:
        code=code("data.inputs", script="stage_input"),
        source=lambda wildcards: source_identity(shipped_input(wildcards)),
    conda:
        "../environment.yml"
    script:
        "../workflow_scripts/stage_input.py"
