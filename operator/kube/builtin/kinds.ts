/** The built-in kinds of a v1.34 API server, as discovery lists them: group, version, resource, scope, subresources, verbs. */
import type { ScaleSubresource } from '../object.ts'

export interface BuiltinSpec {
  group: string
  version: string
  resource: string
  singular: string
  kind: string
  namespaced: boolean
  shortNames?: string[]
  categories?: string[]
  status?: boolean
  scale?: ScaleSubresource
  /** pods/resize (in-place resize, Kubernetes 1.33+: sandbox/pod-resize.ts). */
  resize?: boolean
  /** What bumps metadata.generation: the spec, everything but metadata, or nothing. */
  generation: 'spec' | 'all-but-metadata' | 'none'
  verbs?: string[]
}

const deploymentScale: ScaleSubresource = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.spec.selector' }

/** The built-in kinds, as a real v1.34 cluster lists them in discovery. */
export const builtinSpecs: readonly BuiltinSpec[] = [
  { group: '', version: 'v1', resource: 'namespaces', singular: 'namespace', kind: 'Namespace', namespaced: false, shortNames: ['ns'], status: true, generation: 'none', verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] },
  { group: '', version: 'v1', resource: 'pods', singular: 'pod', kind: 'Pod', namespaced: true, shortNames: ['po'], categories: ['all'], status: true, resize: true, generation: 'none' },
  { group: '', version: 'v1', resource: 'services', singular: 'service', kind: 'Service', namespaced: true, shortNames: ['svc'], categories: ['all'], status: true, generation: 'none', verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] },
  { group: '', version: 'v1', resource: 'configmaps', singular: 'configmap', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'], generation: 'none' },
  { group: '', version: 'v1', resource: 'secrets', singular: 'secret', kind: 'Secret', namespaced: true, generation: 'none' },
  { group: '', version: 'v1', resource: 'serviceaccounts', singular: 'serviceaccount', kind: 'ServiceAccount', namespaced: true, shortNames: ['sa'], generation: 'none' },
  { group: '', version: 'v1', resource: 'resourcequotas', singular: 'resourcequota', kind: 'ResourceQuota', namespaced: true, shortNames: ['quota'], status: true, generation: 'none' },
  { group: '', version: 'v1', resource: 'events', singular: 'event', kind: 'Event', namespaced: true, shortNames: ['ev'], generation: 'none' },
  { group: '', version: 'v1', resource: 'endpoints', singular: 'endpoints', kind: 'Endpoints', namespaced: true, shortNames: ['ep'], generation: 'none' },
  { group: 'apps', version: 'v1', resource: 'deployments', singular: 'deployment', kind: 'Deployment', namespaced: true, shortNames: ['deploy'], categories: ['all'], status: true, scale: deploymentScale, generation: 'spec' },
  { group: 'apps', version: 'v1', resource: 'replicasets', singular: 'replicaset', kind: 'ReplicaSet', namespaced: true, shortNames: ['rs'], categories: ['all'], status: true, scale: deploymentScale, generation: 'spec' },
  { group: 'apps', version: 'v1', resource: 'statefulsets', singular: 'statefulset', kind: 'StatefulSet', namespaced: true, shortNames: ['sts'], categories: ['all'], status: true, scale: deploymentScale, generation: 'spec' },
  { group: 'apps', version: 'v1', resource: 'controllerrevisions', singular: 'controllerrevision', kind: 'ControllerRevision', namespaced: true, generation: 'none' },
  { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', singular: 'poddisruptionbudget', kind: 'PodDisruptionBudget', namespaced: true, shortNames: ['pdb'], status: true, generation: 'spec' },
  { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', singular: 'lease', kind: 'Lease', namespaced: true, generation: 'none' },
  // pkg/registry/discovery/endpointslice/strategy.go: any change but metadata bumps the generation.
  { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', singular: 'endpointslice', kind: 'EndpointSlice', namespaced: true, generation: 'all-but-metadata' },
  { group: 'events.k8s.io', version: 'v1', resource: 'events', singular: 'event', kind: 'Event', namespaced: true, shortNames: ['ev'], generation: 'none' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', singular: 'clusterrolebinding', kind: 'ClusterRoleBinding', namespaced: false, generation: 'none' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', singular: 'clusterrole', kind: 'ClusterRole', namespaced: false, generation: 'none' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', singular: 'rolebinding', kind: 'RoleBinding', namespaced: true, generation: 'none' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', singular: 'role', kind: 'Role', namespaced: true, generation: 'none' },
  // Create-only and never stored: answered by auth/reviews.ts.
  { group: 'authentication.k8s.io', version: 'v1', resource: 'selfsubjectreviews', singular: 'selfsubjectreview', kind: 'SelfSubjectReview', namespaced: false, generation: 'none', verbs: ['create'] },
  { group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews', singular: 'tokenreview', kind: 'TokenReview', namespaced: false, generation: 'none', verbs: ['create'] },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'localsubjectaccessreviews', singular: 'localsubjectaccessreview', kind: 'LocalSubjectAccessReview', namespaced: true, generation: 'none', verbs: ['create'] },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectaccessreviews', singular: 'selfsubjectaccessreview', kind: 'SelfSubjectAccessReview', namespaced: false, generation: 'none', verbs: ['create'] },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectrulesreviews', singular: 'selfsubjectrulesreview', kind: 'SelfSubjectRulesReview', namespaced: false, generation: 'none', verbs: ['create'] },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews', singular: 'subjectaccessreview', kind: 'SubjectAccessReview', namespaced: false, generation: 'none', verbs: ['create'] },
  // After authorization.k8s.io, as a real server lists its groups.
  { group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers', singular: 'horizontalpodautoscaler', kind: 'HorizontalPodAutoscaler', namespaced: true, shortNames: ['hpa'], categories: ['all'], status: true, generation: 'none' },
  // pkg/registry/networking/networkpolicy/storage/storage.go (shortName netpol, no status) and
  // strategy.go (a spec change bumps the generation). Stored and served; never enforced.
  { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies', singular: 'networkpolicy', kind: 'NetworkPolicy', namespaced: true, shortNames: ['netpol'], generation: 'spec' },
  { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', singular: 'customresourcedefinition', kind: 'CustomResourceDefinition', namespaced: false, shortNames: ['crd', 'crds'], categories: ['api-extensions'], status: true, generation: 'spec' },
]
