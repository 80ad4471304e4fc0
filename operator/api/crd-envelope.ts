/**
 * What every CustomResourceDefinition of the operator's API group shares: apiextensions.k8s.io/v1,
 * the operator's labels, the group, the names, the scope, and its one version, served and stored.
 */
import { GROUP, VERSION } from './memcached.ts'

/** The names of a kind (its listKind is `<kind>List`). */
export interface CrdNames {
  kind: string
  plural: string
  singular: string
  shortNames: string[]
  categories?: string[]
}

/** What the one version holds besides its name: subresources, printer columns, schema. */
export interface CrdVersion {
  subresources?: Record<string, unknown>
  additionalPrinterColumns: Record<string, unknown>[]
  schema: { openAPIV3Schema: Record<string, unknown> }
}

/** The CRD object of a kind of the operator's group. */
export function crdOf(names: CrdNames, scope: 'Namespaced' | 'Cluster', version: CrdVersion): Record<string, unknown> {
  const { kind, plural, singular, shortNames, categories } = names
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'memcached-operator', 'app.kubernetes.io/part-of': 'memcached-operator' },
    },
    spec: {
      group: GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular, shortNames, ...(categories ? { categories } : {}) },
      scope,
      versions: [{ name: VERSION, served: true, storage: true, ...version }],
    },
  }
}
