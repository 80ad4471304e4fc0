/**
 * The platform the operator renders for: `openshift` when the cluster serves OpenShift's
 * SecurityContextConstraints (security.openshift.io/v1, a CRD on OpenShift 4), else `kubernetes`.
 * A chart's platforms/<name>.yaml then goes over its defaults (render/chart.ts): on OpenShift the
 * bundled chart leaves the pods' UID and GID to the restricted-v2 SCC, which refuses the image's.
 */
import type { KubeClient } from './client.ts'
import { discoverKinds } from './discovery.ts'

/** What a reconcile renders for. */
export type Platform = 'kubernetes' | 'openshift'

/** The kind whose being served marks OpenShift. */
export const SCC_KIND = { apiVersion: 'security.openshift.io/v1', kind: 'SecurityContextConstraints', resource: 'securitycontextconstraints' } as const

/** Asks discovery (one GET of /apis/security.openshift.io/v1; every authenticated user may read it). @throws ApiError or a network error */
export async function detectPlatform(client: KubeClient): Promise<Platform> {
  const served = (await discoverKinds(client, [SCC_KIND])).get(`${SCC_KIND.apiVersion}/${SCC_KIND.kind}`)
  return served?.served === true ? 'openshift' : 'kubernetes'
}
