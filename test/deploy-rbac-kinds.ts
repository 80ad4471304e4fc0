/**
 * The sandbox serves no rbac.authorization.k8s.io API (it authorizes nothing), so the deploy tests
 * register the four RBAC kinds as CustomResourceDefinitions with the structure of the real v1 types
 * (PolicyRule, RoleRef, Subject; required fields as in the API). `kubectl apply --server-side` of
 * the built kustomization then exercises real discovery, apply and schema validation of them.
 */
import type { KubeObject } from '../operator/controller/client.ts'

const strings = { type: 'array', items: { type: 'string' } }
const policyRule = {
  type: 'object',
  required: ['verbs'],
  properties: { apiGroups: strings, resources: strings, resourceNames: strings, nonResourceURLs: strings, verbs: strings },
}
const roleRef = {
  type: 'object',
  required: ['apiGroup', 'kind', 'name'],
  properties: { apiGroup: { type: 'string' }, kind: { type: 'string', enum: ['Role', 'ClusterRole'] }, name: { type: 'string' } },
}
const subject = {
  type: 'object',
  required: ['kind', 'name'],
  properties: { apiGroup: { type: 'string' }, kind: { type: 'string', enum: ['ServiceAccount', 'User', 'Group'] }, name: { type: 'string' }, namespace: { type: 'string' } },
}

function crd(kind: string, plural: string, scope: 'Namespaced' | 'Cluster', properties: Record<string, unknown>, required: string[] = []): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.rbac.authorization.k8s.io`, annotations: { 'api-approved.kubernetes.io': 'https://github.com/kubernetes/kubernetes/tree/master/pkg/apis/rbac' } },
    spec: {
      group: 'rbac.authorization.k8s.io',
      scope,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', required, properties } } }],
    },
  }
}

/** CRDs standing in for Role, ClusterRole, RoleBinding and ClusterRoleBinding. */
export function rbacKindCRDs(): KubeObject[] {
  const rules = { type: 'array', items: policyRule }
  const binding = { roleRef, subjects: { type: 'array', items: subject } }
  return [
    crd('Role', 'roles', 'Namespaced', { rules }),
    crd('ClusterRole', 'clusterroles', 'Cluster', { rules }),
    crd('RoleBinding', 'rolebindings', 'Namespaced', binding, ['roleRef']),
    crd('ClusterRoleBinding', 'clusterrolebindings', 'Cluster', binding, ['roleRef']),
  ]
}
