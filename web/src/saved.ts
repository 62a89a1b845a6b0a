// The console's remembered choices (language, theme) in localStorage, which may be unavailable (private mode).

/** The choice saved under `key`, when it is one of `allowed`. */
export function loadChoice<T extends string>(key: string, allowed: readonly T[]): T | undefined {
  try {
    const saved = localStorage.getItem(key);
    if (saved !== null && (allowed as readonly string[]).includes(saved)) return saved as T;
  } catch {
    // storage unavailable: nothing remembered
  }
  return undefined;
}

export function saveChoice(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // not remembered, still applied
  }
}
