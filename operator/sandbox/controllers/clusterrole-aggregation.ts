/**
 * kube-controller-manager's clusterrole-aggregation controller: a ClusterRole with an
 * `aggregationRule` gets as `rules` those of every ClusterRole its selectors match, re-computed
 * whenever any ClusterRole changes, written with a forced server-side apply under the field
 * manager `clusterrole-aggregation-controller` (pkg/controller/clusterroleaggregation).
 */
import { aggregateRequest } from '../auth/index.ts'
import { aggregatedRules } from '../auth/rbac.ts'
import type { KubeObject } from '../types.ts'
import type { Client } from './client.ts'
import type { Informer } from './informer.ts'

export class ClusterRoleAggregation {
  #client: Client
  #roles: Informer
  #pending: Promise<void> | undefined
  #again = false
  #stopped = false

  constructor(client: Client, roles: Informer) {
    this.#client = client
    this.#roles = roles
    roles.on(() => this.resync())
  }

  /** Re-computes every aggregated ClusterRole (coalesced: one pass at a time). */
  resync(): void {
    if (this.#stopped || !this.#roles.synced) return
    if (this.#pending) {
      this.#again = true
      return
    }
    this.#pending = this.#sync().finally(() => {
      this.#pending = undefined
      if (this.#again) {
        this.#again = false
        this.resync()
      }
    })
  }

  async #sync(): Promise<void> {
    const all = [...this.#roles.list()]
    for (const role of all) {
      const rules = aggregatedRules(role, all)
      if (!rules || this.#stopped) continue
      await this.#apply(role, rules).catch(() => this.#retry())
    }
  }

  #retry(): void {
    const t = setTimeout(() => this.resync(), 200)
    t.unref()
  }

  async #apply(role: KubeObject, rules: unknown[]): Promise<void> {
    const name = role.metadata.name ?? ''
    const res = await this.#client.access.handle({ ...aggregateRequest(name, rules, this.#client.userAgent), account: true })
    if (res.status >= 400) throw new Error(`apply of ClusterRole ${name}: HTTP ${res.status}`)
  }

  /** Stops acting; waits for a pass in flight. */
  async stop(): Promise<void> {
    this.#stopped = true
    await this.#pending
  }
}
