/**
 * The environment of a test without tap's instrumentation: tap puts its process-info hook in
 * NODE_OPTIONS (with the _TAPJS_PROCESSINFO_* settings beside it) so that every process a test
 * starts reports its coverage. For a process whose coverage cannot count (a copy of the checkout
 * outside operator/, npm itself) the hook only costs time: npm under it takes seconds to start.
 */
export function withoutTapHooks(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(env)) if (!k.startsWith('_TAPJS_PROCESSINFO')) out[k] = v
  const options = (env.NODE_OPTIONS ?? '').split(/\s+/).filter((o) => o !== '' && !/@tapjs[\\/]processinfo/.test(o))
  if (options.length > 0) out.NODE_OPTIONS = options.join(' ')
  else delete out.NODE_OPTIONS
  return out
}
