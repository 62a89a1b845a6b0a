// Names of roles in people's words.
import { t } from './i18n';
import { ROLE } from './types';

export const roleName = (role: number): string =>
  role >= ROLE.root ? t('users.role.root') : role >= ROLE.admin ? t('users.role.admin') : t('users.role.common');
