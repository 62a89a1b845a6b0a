// Content against the embedded PGlite database.
import { contentSuite } from '../shared/content-suite.js';

contentSuite('embedded PGlite', { embedded: true });
