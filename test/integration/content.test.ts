// Content against real Postgres.
import { contentSuite } from '../shared/content-suite.js';

contentSuite('Postgres', { embedded: false });
