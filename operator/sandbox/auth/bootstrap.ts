/**
 * The default ClusterRoles and ClusterRoleBindings a new cluster has, transcribed from
 * kubernetes/kubernetes `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go` and its
 * golden files `testdata/cluster-roles.yaml` and `testdata/cluster-role-bindings.yaml`
 * (commit 025f2834a128798cef30018a5e6a6ae82b5ad885). The user-facing roles are all here
 * (cluster-admin, admin, edit, view and the `system:aggregate-to-*` roles they aggregate),
 * with those every authenticated user holds; the roles of the control-plane components
 * (system:node, system:kube-controller-manager, …) are not, since the sandbox's simulated
 * components bypass authorization.
 */
import type { KubeObject } from '../types.ts'

interface Rule {
  apiGroups?: string[]
  resources?: string[]
  resourceNames?: string[]
  nonResourceURLs?: string[]
  verbs: string[]
}

const read = ['get', 'list', 'watch']
const write = ['create', 'delete', 'deletecollection', 'patch', 'update']
const readWrite = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']

const r = (verbs: string[], apiGroups: string[], resources: string[]): Rule => ({ apiGroups, resources, verbs })
const urls = (verbs: string[], nonResourceURLs: string[]): Rule => ({ nonResourceURLs, verbs })

const aggregateToAdmin = { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' }
const aggregateToEdit = { 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' }
const aggregateToView = { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' }

function clusterRole(name: string, rules: Rule[] | null, opts: { labels?: Record<string, string>; aggregate?: Record<string, string> } = {}): KubeObject {
  const role: KubeObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults', ...opts.labels }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } },
  }
  if (opts.aggregate) role.aggregationRule = { clusterRoleSelectors: [{ matchLabels: opts.aggregate }] }
  if (rules) role.rules = rules
  return role
}

function binding(name: string, subjects: { kind: 'Group' | 'User'; name: string }[]): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: subjects.map((s) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: s.kind, name: s.name })),
  }
}

/** The bootstrap ClusterRoles, in the order of the golden file. */
export function bootstrapClusterRoles(): KubeObject[] {
  return [
    clusterRole('admin', null, { aggregate: aggregateToAdmin }),
    clusterRole('cluster-admin', [r(['*'], ['*'], ['*']), urls(['*'], ['*'])]),
    clusterRole('edit', null, { labels: aggregateToAdmin, aggregate: aggregateToEdit }),
    clusterRole('system:aggregate-to-admin', [r(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']), r(readWrite, ['rbac.authorization.k8s.io'], ['rolebindings', 'roles'])], { labels: aggregateToAdmin }),
    clusterRole(
      'system:aggregate-to-edit',
      [
        r(read, [''], ['pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy', 'secrets', 'services/proxy']),
        r(['impersonate'], [''], ['serviceaccounts']),
        r(write, [''], ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy']),
        r(['create'], [''], ['pods/eviction']),
        r(write, [''], ['configmaps', 'events', 'persistentvolumeclaims', 'replicationcontrollers', 'replicationcontrollers/scale', 'secrets', 'serviceaccounts', 'services', 'services/proxy']),
        r(['create'], [''], ['serviceaccounts/token']),
        r(write, ['apps'], ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'replicasets', 'replicasets/scale', 'statefulsets', 'statefulsets/scale']),
        r(write, ['autoscaling'], ['horizontalpodautoscalers']),
        r(write, ['batch'], ['cronjobs', 'jobs']),
        r(write, ['extensions'], ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'ingresses', 'networkpolicies', 'replicasets', 'replicasets/scale', 'replicationcontrollers/scale']),
        r(write, ['policy'], ['poddisruptionbudgets']),
        r(write, ['networking.k8s.io'], ['ingresses', 'networkpolicies']),
        r(readWrite, ['coordination.k8s.io'], ['leases']),
      ],
      { labels: aggregateToEdit },
    ),
    clusterRole(
      'system:aggregate-to-view',
      [
        r(read, [''], ['configmaps', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status']),
        r(read, [''], ['bindings', 'events', 'limitranges', 'namespaces/status', 'pods/log', 'pods/status', 'replicationcontrollers/status', 'resourcequotas', 'resourcequotas/status']),
        r(read, [''], ['namespaces']),
        r(read, ['discovery.k8s.io'], ['endpointslices']),
        r(read, ['apps'], ['controllerrevisions', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'statefulsets', 'statefulsets/scale', 'statefulsets/status']),
        r(read, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
        r(read, ['batch'], ['cronjobs', 'cronjobs/status', 'jobs', 'jobs/status']),
        r(read, ['extensions'], ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses', 'ingresses/status', 'networkpolicies', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale']),
        r(read, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
        r(read, ['networking.k8s.io'], ['ingresses', 'ingresses/status', 'networkpolicies']),
      ],
      { labels: aggregateToView },
    ),
    clusterRole('system:auth-delegator', [r(['create'], ['authentication.k8s.io'], ['tokenreviews']), r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews'])]),
    clusterRole('system:basic-user', [r(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']), r(['create'], ['authentication.k8s.io'], ['selfsubjectreviews'])]),
    clusterRole('system:discovery', [urls(['get'], ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'])]),
    clusterRole('system:monitoring', [urls(['get'], ['/healthz', '/healthz/*', '/livez', '/livez/*', '/metrics', '/metrics/slis', '/readyz', '/readyz/*'])]),
    clusterRole('system:public-info-viewer', [urls(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/'])]),
    clusterRole('system:service-account-issuer-discovery', [urls(['get'], ['/.well-known/openid-configuration', '/openid/v1/jwks'])]),
    clusterRole('view', null, { labels: aggregateToEdit, aggregate: aggregateToView }),
  ]
}

/** The bootstrap ClusterRoleBindings of those roles (each named after its role). */
export function bootstrapClusterRoleBindings(): KubeObject[] {
  return [
    binding('cluster-admin', [{ kind: 'Group', name: 'system:masters' }]),
    binding('system:basic-user', [{ kind: 'Group', name: 'system:authenticated' }]),
    binding('system:discovery', [{ kind: 'Group', name: 'system:authenticated' }]),
    binding('system:monitoring', [{ kind: 'Group', name: 'system:monitoring' }]),
    binding('system:public-info-viewer', [
      { kind: 'Group', name: 'system:authenticated' },
      { kind: 'Group', name: 'system:unauthenticated' },
    ]),
    binding('system:service-account-issuer-discovery', [{ kind: 'Group', name: 'system:serviceaccounts' }]),
  ]
}
