/**
 * OpenShift's SecurityContextConstraints admission, reduced to the default `restricted-v2` SCC's
 * user and fsGroup strategies (sandbox option `openshift`; see operator/sandbox/README.md). On
 * OpenShift the plugin (openshift/apiserver-library-go pkg/securitycontextconstraints/sccadmission)
 * is a mutating one: for a new Pod it picks an SCC, fills in what the SCC generates and refuses
 * what it does not allow. restricted-v2 has
 * - runAsUser `MustRunAsRange`, the range read from the namespace annotation
 *   `openshift.io/sa.scc.uid-range` (`<first>/<size>`): a container without a user (its own or
 *   the pod's) gets the first UID of the range, one outside it is refused
 *   (user/mustrunasrange.go: `must be in the ranges: [min, max]`);
 * - fsGroup `MustRunAs`, the ranges from `openshift.io/sa.scc.supplemental-groups` (else the UID
 *   range): an unset fsGroup gets the first, one outside is refused (group/mustrunas.go:
 *   `<id> is not an allowed group`).
 * SCCs have no runAsGroup strategy in restricted-v2: a GID is accepted as it is. Without the
 * annotation (the namespace controller of OpenShift allocates it; the sandbox does not) every Pod
 * is refused, as OpenShift refuses them until it is there.
 */
import { forbidden } from '../errors.ts'
import type { KubeObject, ResourceType } from '../types.ts'
import { isObj } from '../../kube/builtin/field.ts'

export const UID_RANGE_ANNOTATION = 'openshift.io/sa.scc.uid-range'
export const SUPPLEMENTAL_GROUPS_ANNOTATION = 'openshift.io/sa.scc.supplemental-groups'
/** The annotation OpenShift sets on an admitted Pod: the SCC that admitted it. */
export const SCC_ANNOTATION = 'openshift.io/scc'
const SCC = 'restricted-v2'

type Obj = Record<string, unknown>

/** `1000680000/10000` → [1000680000, 1000689999]; the first block of a comma-separated list. */
function parseRange(text: string | undefined): [number, number] | undefined {
  const m = /^(\d+)\/(\d+)$/.exec((text ?? '').split(',')[0]!.trim())
  if (!m) return undefined
  const first = Number(m[1])
  const size = Number(m[2])
  return size > 0 ? [first, first + size - 1] : undefined
}

/**
 * Admits a Pod create as restricted-v2 would: fills in the UID and fsGroup it generates (in
 * place) and throws 403 `unable to validate against any security context constraint` for a UID
 * or fsGroup outside the namespace's ranges.
 */
export function admitRestrictedV2(type: ResourceType, pod: KubeObject, old: KubeObject | undefined, namespaceAnnotations: Record<string, string> | undefined): void {
  if (type.group !== '' || type.resource !== 'pods' || old) return
  const name = pod.metadata.name ?? pod.metadata.generateName ?? ''
  const refuse = (problems: string[]): never => {
    throw forbidden('', 'pods', name, `unable to validate against any security context constraint: [provider ${JSON.stringify(SCC)}: ${problems.join(', ')}]`)
  }
  const uids = parseRange(namespaceAnnotations?.[UID_RANGE_ANNOTATION])
  if (!uids) refuse([`Forbidden: unable to find annotation ${UID_RANGE_ANNOTATION}`])
  const [uidMin, uidMax] = uids!
  const groups = parseRange(namespaceAnnotations?.[SUPPLEMENTAL_GROUPS_ANNOTATION]) ?? uids!
  const spec = (isObj(pod.spec) ? pod.spec : {}) as Obj
  const podSc = (isObj(spec.securityContext) ? spec.securityContext : {}) as Obj
  const problems: string[] = []
  if (podSc.fsGroup === undefined) podSc.fsGroup = groups[0]
  else if (typeof podSc.fsGroup !== 'number' || podSc.fsGroup < groups[0] || podSc.fsGroup > groups[1]) {
    problems.push(`.spec.securityContext.fsGroup: Invalid value: []int64{${String(podSc.fsGroup)}}: ${String(podSc.fsGroup)} is not an allowed group`)
  }
  spec.securityContext = podSc
  for (const key of ['initContainers', 'containers']) {
    const list = Array.isArray(spec[key]) ? (spec[key] as unknown[]) : []
    list.forEach((c, i) => {
      if (!isObj(c)) return
      const sc = (isObj(c.securityContext) ? c.securityContext : {}) as Obj
      const uid = sc.runAsUser ?? podSc.runAsUser
      if (uid === undefined) {
        sc.runAsUser = uidMin
        c.securityContext = sc
      } else if (typeof uid !== 'number' || uid < uidMin || uid > uidMax) {
        problems.push(`spec.${key}[${i}].securityContext.runAsUser: Invalid value: ${String(uid)}: must be in the ranges: [${uidMin}, ${uidMax}]`)
      }
    })
  }
  if (problems.length > 0) refuse(problems)
  pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [SCC_ANNOTATION]: SCC }
}

/** The ranges the sandbox gives namespace `default` with the option `openshift` (the size OpenShift allocates: 10,000). */
export const OPENSHIFT_DEFAULT_RANGES: Record<string, string> = { [UID_RANGE_ANNOTATION]: '1000000000/10000', [SUPPLEMENTAL_GROUPS_ANNOTATION]: '1000000000/10000' }

/** The CRD that serves SecurityContextConstraints on OpenShift 4 (what the operator's discovery looks for). */
export const SCC_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'securitycontextconstraints.security.openshift.io' },
  spec: {
    group: 'security.openshift.io',
    scope: 'Cluster',
    names: { plural: 'securitycontextconstraints', singular: 'securitycontextconstraints', kind: 'SecurityContextConstraints', listKind: 'SecurityContextConstraintsList', shortNames: ['scc'] },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
}
