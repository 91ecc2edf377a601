"""The texts of the subject's portal (issue 32), by language and key, merged into
``core.i18n_catalog.CATALOG`` (its test checks every language has every key and placeholder)."""

from __future__ import annotations

PORTAL: dict[str, dict[str, str]] = {
    "ENG": {
        "portal_email_subject": "Your code to see your mandates",
        "portal_email_body": (
            "Your code to sign in and see the mandates issued to this address:\n\n{code}\n\n"
            "It expires in {minutes} minutes.\n\n"
            "If you did not ask for it, ignore this message: nobody can sign in without the code."
        ),
        "portal_sms_body": "{code} is your code to see your mandates (valid {minutes} min).",
        "portal_title": "Your mandates",
        "portal_signin_heading": "See and revoke your mandates",
        "portal_signin_intro": (
            "A mandate lets an organization, or its agent, act for you. Enter the e-mail address or "
            "phone number the organizations asked you at: we send a code to it."
        ),
        "portal_contact_label": "E-mail address or phone number",
        "portal_contact_hint": "A phone number in international format, for example +351912345678.",
        "portal_send": "Send me a code",
        "portal_contact_invalid": "Enter an e-mail address, or a phone number in international format (+…).",
        "portal_code_heading": "Enter your code",
        "portal_code_sent": (
            "If mandates were issued to {contact}, a 6-digit code is on its way to it. "
            "It is valid for 10 minutes."
        ),
        "portal_code_label": "Code",
        "portal_code_wrong": "That code is not correct. Tries left: {left}.",
        "portal_code_expired": "This code has expired. Ask for a new one.",
        "portal_code_locked": "Too many wrong codes: this code is locked. Ask for a new one.",
        "portal_code_format": "Enter the 6 digits of the code.",
        "portal_no_code": "Ask for a code first.",
        "portal_other_contact": "Ask for a new code or use another contact",
        "portal_too_many": "Too many tries. Wait {minutes} minutes, then try again.",
        "portal_signed_in_as": "Signed in as {contact}",
        "portal_sign_out": "Sign out",
        "portal_signed_out": "You are signed out.",
        "portal_session_ended": "Your session has ended: sign in again.",
        "portal_list_intro": "Every mandate issued to you, in every organization that offers this page.",
        "portal_none": "No mandate was issued to this contact.",
        "portal_org": "Organization",
        "portal_action": "Action",
        "portal_action_version": "{name}, version {version}",
        "portal_status": "Status",
        "portal_status_ACTIVE": "Active",
        "portal_status_REVOKED": "Revoked",
        "portal_status_EXPIRED": "Expired",
        "portal_status_OTHER": "Not active",
        "portal_issued": "Issued",
        "portal_valid_until": "Valid until",
        "portal_revoked_at": "Revoked",
        "portal_limits": "Limits and their use",
        "portal_no_limits": "No limits.",
        "portal_used": "{used} used, {remaining} left",
        "portal_resets": "(starts again {at})",
        "portal_verifications": "Verifications",
        "portal_verification_count": "Verifications: {n}",
        "portal_no_verifications": "No verification yet.",
        "portal_when": "When",
        "portal_verifier": "Verifier",
        "portal_result": "Result",
        "portal_allowed": "Allowed",
        "portal_denied": "Denied",
        "portal_details": "Details of {name}",
        "portal_back": "Back to your mandates",
        "portal_revoke": "Revoke this mandate",
        "portal_revoke_heading": "Revoke this mandate?",
        "portal_revoke_warning": (
            "{org} and its agents can no longer act for you with it. This cannot be undone."
        ),
        "portal_revoke_confirm": "Yes, revoke it",
        "portal_keep": "No, keep it",
        "portal_revoked_notice": "The mandate is revoked. {org} is told.",
        "portal_not_found": "No such mandate.",
        "portal_not_revocable": "This mandate is not active: it cannot be revoked.",
        "portal_stale": "This form has expired: reload the page and try again.",
    },
    "PRT": {
        "portal_email_subject": "O seu código para ver os seus mandatos",
        "portal_email_body": (
            "O seu código para entrar e ver os mandatos emitidos para este endereço:\n\n{code}\n\n"
            "Expira em {minutes} minutos.\n\n"
            "Se não o pediu, ignore esta mensagem: ninguém entra sem o código."
        ),
        "portal_sms_body": "{code} é o seu código para ver os seus mandatos (válido {minutes} min).",
        "portal_title": "Os seus mandatos",
        "portal_signin_heading": "Veja e revogue os seus mandatos",
        "portal_signin_intro": (
            "Um mandato permite que uma organização, ou o seu agente, atue por si. Indique o endereço "
            "de e-mail ou o número de telefone a que as organizações lhe pediram: enviamos-lhe um código."
        ),
        "portal_contact_label": "Endereço de e-mail ou número de telefone",
        "portal_contact_hint": "Um número de telefone em formato internacional, por exemplo +351912345678.",
        "portal_send": "Enviar-me um código",
        "portal_contact_invalid": (
            "Indique um endereço de e-mail, ou um número de telefone em formato internacional (+…)."
        ),
        "portal_code_heading": "Introduza o seu código",
        "portal_code_sent": (
            "Se foram emitidos mandatos para {contact}, um código de 6 dígitos está a caminho. "
            "É válido durante 10 minutos."
        ),
        "portal_code_label": "Código",
        "portal_code_wrong": "Esse código não está correto. Tentativas restantes: {left}.",
        "portal_code_expired": "Este código expirou. Peça um novo.",
        "portal_code_locked": "Demasiados códigos errados: este código está bloqueado. Peça um novo.",
        "portal_code_format": "Introduza os 6 dígitos do código.",
        "portal_no_code": "Peça primeiro um código.",
        "portal_other_contact": "Pedir um novo código ou usar outro contacto",
        "portal_too_many": "Demasiadas tentativas. Aguarde {minutes} minutos e tente de novo.",
        "portal_signed_in_as": "Sessão iniciada como {contact}",
        "portal_sign_out": "Terminar sessão",
        "portal_signed_out": "A sessão terminou.",
        "portal_session_ended": "A sua sessão terminou: entre de novo.",
        "portal_list_intro": (
            "Todos os mandatos emitidos para si, em todas as organizações que oferecem esta página."
        ),
        "portal_none": "Não foi emitido nenhum mandato para este contacto.",
        "portal_org": "Organização",
        "portal_action": "Ação",
        "portal_action_version": "{name}, versão {version}",
        "portal_status": "Estado",
        "portal_status_ACTIVE": "Ativo",
        "portal_status_REVOKED": "Revogado",
        "portal_status_EXPIRED": "Expirado",
        "portal_status_OTHER": "Inativo",
        "portal_issued": "Emitido",
        "portal_valid_until": "Válido até",
        "portal_revoked_at": "Revogado",
        "portal_limits": "Limites e a sua utilização",
        "portal_no_limits": "Sem limites.",
        "portal_used": "{used} usado, {remaining} restante",
        "portal_resets": "(recomeça {at})",
        "portal_verifications": "Verificações",
        "portal_verification_count": "Verificações: {n}",
        "portal_no_verifications": "Ainda nenhuma verificação.",
        "portal_when": "Quando",
        "portal_verifier": "Verificador",
        "portal_result": "Resultado",
        "portal_allowed": "Permitida",
        "portal_denied": "Recusada",
        "portal_details": "Detalhes de {name}",
        "portal_back": "Voltar aos seus mandatos",
        "portal_revoke": "Revogar este mandato",
        "portal_revoke_heading": "Revogar este mandato?",
        "portal_revoke_warning": (
            "{org} e os seus agentes deixam de poder atuar por si com ele. Não pode ser desfeito."
        ),
        "portal_revoke_confirm": "Sim, revogar",
        "portal_keep": "Não, manter",
        "portal_revoked_notice": "O mandato foi revogado. {org} é informada.",
        "portal_not_found": "Mandato inexistente.",
        "portal_not_revocable": "Este mandato não está ativo: não pode ser revogado.",
        "portal_stale": "Este formulário expirou: recarregue a página e tente de novo.",
    },
    "SPA": {
        "portal_email_subject": "Su código para ver sus mandatos",
        "portal_email_body": (
            "Su código para entrar y ver los mandatos emitidos a esta dirección:\n\n{code}\n\n"
            "Caduca en {minutes} minutos.\n\n"
            "Si no lo ha pedido, ignore este mensaje: nadie entra sin el código."
        ),
        "portal_sms_body": "{code} es su código para ver sus mandatos (válido {minutes} min).",
        "portal_title": "Sus mandatos",
        "portal_signin_heading": "Vea y revoque sus mandatos",
        "portal_signin_intro": (
            "Un mandato permite a una organización, o a su agente, actuar en su nombre. Indique la "
            "dirección de correo o el teléfono al que las organizaciones le pidieron: le enviamos un código."
        ),
        "portal_contact_label": "Correo electrónico o número de teléfono",
        "portal_contact_hint": "Un número de teléfono en formato internacional, por ejemplo +34612345678.",
        "portal_send": "Enviarme un código",
        "portal_contact_invalid": (
            "Indique un correo electrónico, o un número de teléfono en formato internacional (+…)."
        ),
        "portal_code_heading": "Introduzca su código",
        "portal_code_sent": (
            "Si se emitieron mandatos a {contact}, un código de 6 dígitos está en camino. "
            "Es válido durante 10 minutos."
        ),
        "portal_code_label": "Código",
        "portal_code_wrong": "Ese código no es correcto. Intentos restantes: {left}.",
        "portal_code_expired": "Este código ha caducado. Pida uno nuevo.",
        "portal_code_locked": "Demasiados códigos erróneos: este código está bloqueado. Pida uno nuevo.",
        "portal_code_format": "Introduzca los 6 dígitos del código.",
        "portal_no_code": "Pida primero un código.",
        "portal_other_contact": "Pedir un código nuevo o usar otro contacto",
        "portal_too_many": "Demasiados intentos. Espere {minutes} minutos y vuelva a intentarlo.",
        "portal_signed_in_as": "Sesión iniciada como {contact}",
        "portal_sign_out": "Cerrar sesión",
        "portal_signed_out": "Ha cerrado la sesión.",
        "portal_session_ended": "Su sesión ha terminado: vuelva a entrar.",
        "portal_list_intro": (
            "Todos los mandatos emitidos a usted, en todas las organizaciones que ofrecen esta página."
        ),
        "portal_none": "No se emitió ningún mandato a este contacto.",
        "portal_org": "Organización",
        "portal_action": "Acción",
        "portal_action_version": "{name}, versión {version}",
        "portal_status": "Estado",
        "portal_status_ACTIVE": "Activo",
        "portal_status_REVOKED": "Revocado",
        "portal_status_EXPIRED": "Caducado",
        "portal_status_OTHER": "Inactivo",
        "portal_issued": "Emitido",
        "portal_valid_until": "Válido hasta",
        "portal_revoked_at": "Revocado",
        "portal_limits": "Límites y su uso",
        "portal_no_limits": "Sin límites.",
        "portal_used": "{used} usado, {remaining} restante",
        "portal_resets": "(vuelve a empezar {at})",
        "portal_verifications": "Verificaciones",
        "portal_verification_count": "Verificaciones: {n}",
        "portal_no_verifications": "Aún ninguna verificación.",
        "portal_when": "Cuándo",
        "portal_verifier": "Verificador",
        "portal_result": "Resultado",
        "portal_allowed": "Permitida",
        "portal_denied": "Denegada",
        "portal_details": "Detalles de {name}",
        "portal_back": "Volver a sus mandatos",
        "portal_revoke": "Revocar este mandato",
        "portal_revoke_heading": "¿Revocar este mandato?",
        "portal_revoke_warning": (
            "{org} y sus agentes ya no podrán actuar en su nombre con él. No se puede deshacer."
        ),
        "portal_revoke_confirm": "Sí, revocarlo",
        "portal_keep": "No, conservarlo",
        "portal_revoked_notice": "El mandato está revocado. {org} ha sido informada.",
        "portal_not_found": "No existe ese mandato.",
        "portal_not_revocable": "Este mandato no está activo: no se puede revocar.",
        "portal_stale": "Este formulario ha caducado: recargue la página y vuelva a intentarlo.",
    },
    "FRA": {
        "portal_email_subject": "Votre code pour voir vos mandats",
        "portal_email_body": (
            "Votre code pour vous connecter et voir les mandats émis à cette adresse :\n\n{code}\n\n"
            "Il expire dans {minutes} minutes.\n\n"
            "Si vous ne l'avez pas demandé, ignorez ce message : personne n'entre sans le code."
        ),
        "portal_sms_body": "{code} est votre code pour voir vos mandats (valable {minutes} min).",
        "portal_title": "Vos mandats",
        "portal_signin_heading": "Voyez et révoquez vos mandats",
        "portal_signin_intro": (
            "Un mandat permet à une organisation, ou à son agent, d'agir pour vous. Saisissez l'adresse "
            "e-mail ou le numéro de téléphone auquel les organisations vous ont sollicité : nous y "
            "envoyons un code."
        ),
        "portal_contact_label": "Adresse e-mail ou numéro de téléphone",
        "portal_contact_hint": "Un numéro de téléphone au format international, par exemple +33612345678.",
        "portal_send": "M'envoyer un code",
        "portal_contact_invalid": (
            "Saisissez une adresse e-mail, ou un numéro de téléphone au format international (+…)."
        ),
        "portal_code_heading": "Saisissez votre code",
        "portal_code_sent": (
            "Si des mandats ont été émis à {contact}, un code à 6 chiffres est en route. "
            "Il est valable 10 minutes."
        ),
        "portal_code_label": "Code reçu",
        "portal_code_wrong": "Ce code n'est pas correct. Essais restants : {left}.",
        "portal_code_expired": "Ce code a expiré. Demandez-en un nouveau.",
        "portal_code_locked": "Trop de codes erronés : ce code est bloqué. Demandez-en un nouveau.",
        "portal_code_format": "Saisissez les 6 chiffres du code.",
        "portal_no_code": "Demandez d'abord un code.",
        "portal_other_contact": "Demander un nouveau code ou utiliser un autre contact",
        "portal_too_many": "Trop d'essais. Attendez {minutes} minutes, puis réessayez.",
        "portal_signed_in_as": "Connecté en tant que {contact}",
        "portal_sign_out": "Se déconnecter",
        "portal_signed_out": "Vous êtes déconnecté.",
        "portal_session_ended": "Votre session a pris fin : reconnectez-vous.",
        "portal_list_intro": (
            "Tous les mandats émis pour vous, dans toutes les organisations qui proposent cette page."
        ),
        "portal_none": "Aucun mandat n'a été émis pour ce contact.",
        "portal_org": "Organisation",
        "portal_action": "Action autorisée",
        "portal_action_version": "{name} (version {version})",
        "portal_status": "Statut",
        "portal_status_ACTIVE": "Actif",
        "portal_status_REVOKED": "Révoqué",
        "portal_status_EXPIRED": "Expiré",
        "portal_status_OTHER": "Inactif",
        "portal_issued": "Émis",
        "portal_valid_until": "Valable jusqu'au",
        "portal_revoked_at": "Révoqué",
        "portal_limits": "Limites et leur usage",
        "portal_no_limits": "Aucune limite.",
        "portal_used": "{used} utilisé, {remaining} restant",
        "portal_resets": "(repart {at})",
        "portal_verifications": "Vérifications",
        "portal_verification_count": "Vérifications : {n}",
        "portal_no_verifications": "Aucune vérification pour l'instant.",
        "portal_when": "Quand",
        "portal_verifier": "Vérificateur",
        "portal_result": "Résultat",
        "portal_allowed": "Autorisée",
        "portal_denied": "Refusée",
        "portal_details": "Détails de {name}",
        "portal_back": "Retour à vos mandats",
        "portal_revoke": "Révoquer ce mandat",
        "portal_revoke_heading": "Révoquer ce mandat ?",
        "portal_revoke_warning": (
            "{org} et ses agents ne pourront plus agir pour vous avec lui. C'est irréversible."
        ),
        "portal_revoke_confirm": "Oui, le révoquer",
        "portal_keep": "Non, le garder",
        "portal_revoked_notice": "Le mandat est révoqué. {org} en est informée.",
        "portal_not_found": "Ce mandat n'existe pas.",
        "portal_not_revocable": "Ce mandat n'est pas actif : il ne peut pas être révoqué.",
        "portal_stale": "Ce formulaire a expiré : rechargez la page et réessayez.",
    },
}
