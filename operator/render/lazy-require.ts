/**
 * The one place the render engine loads a module on demand: ajv's compiler (only when a chart's
 * schema has no cached validator), the runtime helpers that a cached validator calls, and
 * `node:vm` (only to locate a template's syntax error). The start-up snapshot of `render`
 * (operator/snapshot) replaces this module with a table of what it preloaded.
 */
import { createRequire } from 'node:module'

/** `require` for the render engine's optional modules. */
export const lazyRequire: (id: string) => unknown = createRequire(import.meta.url)
