/** Pruning of built-in kinds' unknown fields on decoding, over upstream's OpenAPI definitions (kube/openapi-validate.ts). */
import { builtinDefinitions, unknownFields } from '../kube/openapi-validate.ts'

/**
 * What decoding a built-in kind into its Go type does to fields the type does not have: drops
 * them, and reports each (`spec.replicass`, `spec.template.spec.containers[0].imagee`, in the
 * order of the document) for `fieldValidation` Warn and Strict (apimachinery's strict JSON
 * decoding, sigs.k8s.io/json). Undefined for a kind without a definition. With `remove` false,
 * only reports.
 */
export function builtinPruner(group: string, version: string, kind: string): ((obj: Record<string, unknown>, remove?: boolean) => string[]) | undefined {
  if (!builtinDefinitions().byGvk.has(`${group}/${version}/${kind}`)) return undefined
  return (obj, remove = true) => unknownFields(group, version, kind, obj, remove, storedAlready) ?? []
}

/**
 * Whether a value of a write is a member of the stored object, at the same path of the same
 * object, and so was checked when that was written: the only deeply frozen values a write holds
 * are those the server shares from the stored object instead of copying (a built-in kind's
 * `/status` write, whose schema never changes). A request's body is always the server's own copy.
 */
export function storedAlready(value: object): boolean {
  return Object.isFrozen(value)
}
