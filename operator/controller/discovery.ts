/**
 * What the cluster serves of a chart's declared kinds, read from legacy discovery
 * (`GET /api/v1`, `GET /apis/<group>/<version>`: one request per group-version, each an
 * APIResourceList). A group-version the server does not serve answers 404, as a CRD not (yet)
 * installed does (apiserver `endpoints/discovery`); discovery is readable by every authenticated
 * user (the `system:discovery` ClusterRole), so it needs no RBAC rule.
 */
import { apiErrorFrom, type KubeClient } from './client.ts'

/** How the cluster serves one kind. */
export type KindServing =
  | { served: true; namespaced: boolean }
  | { served: false; why: string }

interface ApiResource {
  name?: string
  kind?: string
  namespaced?: boolean
}

/**
 * Asks discovery about each kind (keyed `apiVersion/kind`). A group-version that fails for another
 * reason than 404 throws (the caller retries later): not knowing is not the same as not served.
 */
export async function discoverKinds(client: KubeClient, kinds: readonly { apiVersion: string; kind: string; resource: string }[]): Promise<Map<string, KindServing>> {
  const lists = new Map<string, ApiResource[] | undefined>()
  const out = new Map<string, KindServing>()
  for (const k of kinds) {
    if (!lists.has(k.apiVersion)) {
      const path = k.apiVersion.includes('/') ? `/apis/${k.apiVersion}` : `/api/${k.apiVersion}`
      const res = await client.request({ method: 'GET', path })
      if (res.status === 404) lists.set(k.apiVersion, undefined)
      else if (res.status >= 200 && res.status < 300) lists.set(k.apiVersion, ((JSON.parse(res.body) as { resources?: ApiResource[] }).resources ?? []))
      else throw apiErrorFrom(res.status, res.body)
    }
    const resources = lists.get(k.apiVersion)
    const found = resources?.find((r) => r.name === k.resource)
    const key = `${k.apiVersion}/${k.kind}`
    if (!resources) out.set(key, { served: false, why: `the cluster does not serve ${k.apiVersion}` })
    else if (!found) out.set(key, { served: false, why: `the cluster serves no resource ${k.resource} in ${k.apiVersion}` })
    else if (found.kind !== k.kind) out.set(key, { served: false, why: `resource ${k.resource} in ${k.apiVersion} is of kind ${found.kind ?? '?'}, not ${k.kind}` })
    else out.set(key, { served: true, namespaced: found.namespaced === true })
  }
  return out
}
