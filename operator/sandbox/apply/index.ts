/**
 * Server-side apply, managedFields and strategic merge patch for the sandbox API server: pure
 * functions over plain JSON objects, faithful to structured-merge-diff as the API server uses it.
 */
export { serverSideApply, trackUpdate, conflictMessage, BEFORE_FIRST_APPLY } from './managed.ts'
export type { ApplyOptions, ApplyResult, ApplyConflict, UpdateOptions } from './managed.ts'
export { ApplyTypeError, gvkString, compareObjects, mergeObjects, toFieldSet, removePaths } from './merge.ts'
export type { Comparison } from './merge.ts'
export { strategicMergePatch, StrategicPatchError } from './strategic.ts'
export { builtinTopology, hasBuiltinTopology, customResourceTopology, METADATA, POD_SPEC, POD_TEMPLATE_SPEC } from './topology.ts'
export { topologyFromOpenAPI, schemaTopology } from './crd-topology.ts'
export { fromFieldsV1, toFieldsV1, pathString, members, EMPTY as EMPTY_SET } from './fieldset.ts'
export type { FieldSet } from './fieldset.ts'
export { deepEqual, clone } from './json.ts'
