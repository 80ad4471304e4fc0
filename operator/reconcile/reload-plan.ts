/**
 * How a chart tells the operator that its pods load renewed Secrets in place: an annotation on the
 * workload (not on its pod template, so that it never rolls a pod) holding, as JSON, memcached's
 * port, the TLS Secret memcached serves from and the auth file's Secret. The operator is generic
 * over charts: it reads this declaration, never the chart's values. `memory` declares memcached's
 * `-m`, which the operator grows in place (resize.ts).
 */
import type { KubeObject } from '../controller/client.ts'

/** The workload annotation that declares a {@link ReloadPlan}. */
export const RELOAD_ANNOTATION = 'memcached.cache.example.com/reload'

/** What the operator loads in place into a workload's pods. */
export interface ReloadPlan {
  /** memcached's port in the pods. */
  port: number
  /** memcached serves TLS from this Secret (tls.crt, tls.key); `clientCertificate`: it asks clients for one (ssl_verify_mode ≥ 1). */
  tls?: { secretName: string; clientCertificate: boolean }
  /** memcached's `-Y` auth file is the key `key` of this Secret (user:password lines); a sidecar sends memcached SIGHUP when the kubelet updates it. */
  authfile?: { secretName: string; key: string }
  /** memcached's memory (`-m`) in this container: grown in place when the cluster can resize pods (resize.ts). */
  memory?: { container: string; memoryMB: number }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const isName = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 253

/**
 * The plan a workload declares: undefined without the annotation.
 * @throws Error naming the annotation and what is wrong with it (a chart's mistake)
 */
export function reloadPlanOf(workload: KubeObject | undefined): ReloadPlan | undefined {
  const text = workload?.metadata.annotations?.[RELOAD_ANNOTATION]
  if (text === undefined) return undefined
  const where = `annotation ${RELOAD_ANNOTATION} of ${workload!.kind} ${workload!.metadata.name}`
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (err) {
    throw new Error(`${where}: not JSON (${err instanceof Error ? err.message : String(err)})`)
  }
  if (!isRecord(v)) throw new Error(`${where}: must be a JSON object`)
  const { port, tls, authfile, memory } = v
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${where}: port must be a port number (got ${JSON.stringify(port)})`)
  const plan: ReloadPlan = { port }
  if (tls !== undefined) {
    if (!isRecord(tls) || !isName(tls.secretName) || typeof tls.clientCertificate !== 'boolean') throw new Error(`${where}: tls must be {"secretName": <name>, "clientCertificate": <boolean>}`)
    plan.tls = { secretName: tls.secretName, clientCertificate: tls.clientCertificate }
  }
  if (authfile !== undefined) {
    if (!isRecord(authfile) || !isName(authfile.secretName) || !isName(authfile.key)) throw new Error(`${where}: authfile must be {"secretName": <name>, "key": <key>}`)
    plan.authfile = { secretName: authfile.secretName, key: authfile.key }
  }
  if (memory !== undefined) {
    if (!isRecord(memory) || !isName(memory.container) || typeof memory.memoryMB !== 'number' || !Number.isInteger(memory.memoryMB) || memory.memoryMB < 1) throw new Error(`${where}: memory must be {"container": <name>, "memoryMB": <integer>}`)
    plan.memory = { container: memory.container, memoryMB: memory.memoryMB }
  }
  return plan
}
