#!/bin/sh
# Regenerates the models (into $1, by default src/bursar_sdk/models) from the OpenAPI documents
# (sdk/typescript/openapi's, which a test keeps equal to what the services serve), with the
# pinned datamodel-code-generator (PYTHON: the interpreter that has it).
set -e
here=$(dirname "$0")
out=${1:-$here/src/bursar_sdk/models}
for service in relayer indexer; do
  "${PYTHON:-python3}" -m datamodel_code_generator \
    --input "$here/../typescript/openapi/$service.json" --input-file-type openapi \
    --output "$out/$service.py" \
    --output-model-type pydantic_v2.BaseModel --use-annotated --field-constraints \
    --snake-case-field --target-python-version 3.11 --disable-timestamp --use-type-alias \
    --allow-population-by-field-name --formatters black isort
done
