/**
 * Server-side apply, managedFields and strategic merge patch for the sandbox API server: pure
 * functions over plain JSON objects, faithful to structured-merge-diff as the API server uses it.
 *
 * What the caller (the server) must know:
 * - `serverSideApply` never sets uid, resourceVersion, generation or creationTimestamp (they are
 *   never owned either). With `changed: false` it returns the `live` object itself: do not write.
 * - `resetFields` both removes ownership and restores the content from the live object:
 *   `[['status']]` for the main resource of a kind with a status subresource; `[['spec']]` or
 *   `[['spec'], ['metadata']]` for `/status` (`['metadata']` keeps the new managedFields).
 * - `trackUpdate` mutates and returns `updated`; call it after defaulting (on create the writer
 *   owns the defaults, as on a real server).
 * - Built-in kinds lose empty lists and maps (`env: []`, `labels: {}`) in the apply result, as
 *   through Go types; `omitEmpty(obj, topology)` does the same for other writes if wanted.
 * - Typing errors in an applied configuration throw `ApplyTypeError` (`status` 500, the server's
 *   `failed to create typed patch object (…): <path>: <detail>` message).
 *
 * Known differences from a real API server:
 * - Fields a topology does not declare merge like Go struct fields: refusing them (`field not
 *   declared in schema`) is the server's job before it calls the engine (pipeline/apply.ts).
 * - A `null` in an applied configuration replaces a scalar, an atomic node or an empty container
 *   and leaves a granular one (a deduced map too) as it is (structured-merge-diff's merge); it is
 *   kept in a custom resource (whose CRD defaulting drops the non-nullable ones) and dropped from
 *   a built-in kind's object.
 * - An ownership-only apply keeps the applier's old timestamp (a brand-new entry gets `now`).
 * - No conversion between apiVersions: managers of other versions are compared as is.
 * `test/sandbox-apply-smd-tables.test.ts` runs structured-merge-diff's own merge tables against
 * this engine; operator/sandbox/README.md counts the cases and names those that deviate.
 */
export { serverSideApply, trackUpdate, conflictMessage, BEFORE_FIRST_APPLY } from './managed.ts'
export type { ApplyOptions, ApplyResult, ApplyConflict, UpdateOptions } from './managed.ts'
export { ApplyTypeError, gvkString, compareObjects, mergeObjects, omitEmpty, toFieldSet, removePaths } from './merge.ts'
export type { Comparison } from './merge.ts'
export { StrategicPatchError } from '../../kube/strategic-merge.ts'
export { strategicMergePatch, builtinPatchMeta, patchMetaFromOpenAPI, patchMetaFromTopology } from './patch-meta.ts'
export type { PatchMeta } from './patch-meta.ts'
export { builtinTopology, hasBuiltinTopology, customResourceTopology, METADATA, POD_SPEC, POD_TEMPLATE_SPEC } from './topology.ts'
export { topologyFromOpenAPI, schemaTopology } from './crd-topology.ts'
export { fromFieldsV1, toFieldsV1, pathString, members, EMPTY as EMPTY_SET } from './fieldset.ts'
export type { FieldSet } from './fieldset.ts'
export { deepEqual, clone } from '../../kube/json.ts'
