/**
 * The resource types the sandbox serves: the built-in ones it starts with, and those of each
 * CustomResourceDefinition once it is Established. Discovery and the request handler both read
 * from here, so a CRD's kinds appear and disappear in one place.
 */
import { applyErrors, decoding } from '../kube/openapi-validate.ts'
import { builtinPruner, storedAlready } from './openapi.ts'

/**
 * Built-in objects whose decoding met no field their kind lacks: the unknown-field pass that
 * follows in the same write (prune, or the report of `fieldValidation=Strict`) has nothing to find
 * and does not walk them again. Defaulting and the server's own stamps between the two add only
 * declared fields. An object leaves the set at that pass, or when it decodes again with one.
 */
const declaredOnly = new WeakSet<object>()
import type { KubeObject, ResourceType, ScaleSubresource, Topology } from './types.ts'

/** Builds a built-in kind's schema topology (the apply engine provides it). */
export type TopologyFor = (group: string, version: string, kind: string) => Topology

const allVerbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']

interface BuiltinSpec {
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
  /** pods/resize (in-place resize, Kubernetes 1.33+: pod-resize.ts). */
  resize?: boolean
  generation: ResourceType['generation']
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

/** The storage table of a resource: versions of one group/resource share it. */
export function tableOf(type: Pick<ResourceType, 'group' | 'resource'>): string {
  return `${type.group}/${type.resource}`
}

/** `apps/v1` or `v1`. */
export function groupVersion(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`
}

/** The group and version of an `apiVersion` string. */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/')
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) }
}

/** Served types, by group/version/resource. */
export class Registry {
  #types = new Map<string, ResourceType>()
  #byKind = new Map<string, ResourceType>()
  #crds = new Map<string, ResourceType[]>()
  /** Order in which groups were first registered: discovery lists them in this order. */
  #groupOrder: string[] = []

  /**
   * @param topologyFor schema topology of built-in kinds
   * @param defaulter server-side defaulting of built-in objects
   */
  constructor(topologyFor: TopologyFor, defaulter?: (obj: KubeObject) => void) {
    for (const s of builtinSpecs) {
      const type: ResourceType = {
        group: s.group,
        version: s.version,
        resource: s.resource,
        singular: s.singular,
        kind: s.kind,
        listKind: `${s.kind}List`,
        namespaced: s.namespaced,
        verbs: s.verbs ?? allVerbs,
        subresources: {},
        topology: topologyFor(s.group, s.version, s.kind),
        custom: false,
        generation: s.generation,
      }
      if (s.shortNames) type.shortNames = s.shortNames
      if (s.categories) type.categories = s.categories
      if (s.status) type.subresources.status = true
      if (s.scale) type.subresources.scale = s.scale
      if (s.resize) type.subresources.resize = true
      if (defaulter) type.default = defaulter
      const prune = builtinPruner(s.group, s.version, s.kind)
      if (prune) {
        type.prune = (obj) => (declaredOnly.delete(obj) ? [] : prune(obj as unknown as Record<string, unknown>, true))
        type.undeclared = (obj) => (declaredOnly.delete(obj) ? [] : prune(obj as unknown as Record<string, unknown>, false))
        type.decodeError = (obj) => {
          const d = decoding(s.group, s.version, s.kind, obj as unknown as Record<string, unknown>, storedAlready)
          if (d !== undefined && d.problem === undefined && d.undeclared === 0) declaredOnly.add(obj)
          else declaredOnly.delete(obj)
          return d?.problem?.message
        }
        type.applyErrors = (obj) => applyErrors(s.group, s.version, s.kind, obj as unknown as Record<string, unknown>) ?? []
      }
      this.#add(type)
    }
  }

  #add(type: ResourceType): void {
    this.#types.set(`${type.group}/${type.version}/${type.resource}`, type)
    this.#byKind.set(`${type.group}/${type.version}/${type.kind}`, type)
    if (!this.#groupOrder.includes(type.group)) this.#groupOrder.push(type.group)
  }

  #remove(type: ResourceType): void {
    this.#types.delete(`${type.group}/${type.version}/${type.resource}`)
    this.#byKind.delete(`${type.group}/${type.version}/${type.kind}`)
  }

  /** The type served at a group/version/resource, if any. */
  lookup(group: string, version: string, resource: string): ResourceType | undefined {
    return this.#types.get(`${group}/${version}/${resource}`)
  }

  /** The type of a kind at a group/version, if served. */
  byKind(group: string, version: string, kind: string): ResourceType | undefined {
    return this.#byKind.get(`${group}/${version}/${kind}`)
  }

  /** Every served type, built-ins first, in registration order. */
  all(): ResourceType[] {
    return [...this.#types.values()]
  }

  /** Groups in discovery order, each with its versions (preferred first) and types. */
  groups(): { group: string; versions: { version: string; types: ResourceType[] }[] }[] {
    const out: { group: string; versions: { version: string; types: ResourceType[] }[] }[] = []
    for (const group of this.#groupOrder) {
      const versions = new Map<string, ResourceType[]>()
      for (const t of this.#types.values()) {
        if (t.group !== group) continue
        let list = versions.get(t.version)
        if (!list) versions.set(t.version, (list = []))
        list.push(t)
      }
      if (versions.size === 0) continue
      out.push({ group, versions: [...versions.entries()].map(([version, types]) => ({ version, types })) })
    }
    return out
  }

  /**
   * Names of the CRD (other than `crdName`) or built-in already serving `plural` or `kind` in
   * `group`: a non-empty answer means NamesAccepted=False.
   */
  nameConflicts(crdName: string, group: string, plural: string, kind: string): string[] {
    const out: string[] = []
    const own = new Set(this.#crds.get(crdName) ?? [])
    for (const t of this.#types.values()) {
      if (t.group !== group || own.has(t)) continue
      if (t.resource === plural) out.push(`"${plural}" is already in use`)
      else if (t.kind === kind) out.push(`"${kind}" is already in use`)
    }
    return [...new Set(out)]
  }

  /** Serves a CRD's types (replacing what it served before). */
  registerCRD(crdName: string, types: ResourceType[]): void {
    this.unregisterCRD(crdName)
    for (const t of types) this.#add(t)
    this.#crds.set(crdName, types)
  }

  /** Stops serving a CRD's types; returns them. */
  unregisterCRD(crdName: string): ResourceType[] {
    const old = this.#crds.get(crdName) ?? []
    for (const t of old) this.#remove(t)
    this.#crds.delete(crdName)
    return old
  }

  /** The types a CRD currently serves. */
  crdTypes(crdName: string): ResourceType[] {
    return this.#crds.get(crdName) ?? []
  }
}
