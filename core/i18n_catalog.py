"""The texts of ``core.i18n``, by language and key (a test checks every language has every key
with the same placeholders)."""

from __future__ import annotations

from core.i18n_portal import PORTAL

CATALOG: dict[str, dict[str, str]] = {
    "ENG": {
        # the message with the code
        "email_subject": "{org} asks for your approval",
        "email_body": (
            "{org} asks you to review and approve the following "
            "(names as written by {org}):\n\n{what}\n\n"
            "Your security code:\n\n{code}\n\nIt expires in {minutes} minutes.\n\n"
            "Open this link to decide:\n{link}\n\n"
            "If you did not expect this message, ignore it: nothing happens without you."
        ),
        "sms_body": "{code} is your security code for {org} (valid {minutes} min). Decide at {link}",
        # a subject with a secondary contact (issue 36): the link to the contact, the code to the other
        "link_email_body": (
            "{org} asks you to review and approve the following "
            "(names as written by {org}):\n\n{what}\n\n"
            "Open this link to decide:\n{link}\n\n"
            "When you open it, your security code is sent to your other contact.\n\n"
            "If you did not expect this message, ignore it: nothing happens without you."
        ),
        "link_sms_body": (
            "{org} asks for your approval. Decide at {link} (your code goes to your other contact)"
        ),
        "code_email_subject": "{org}: your security code",
        "code_email_body": (
            "Your security code for the approval {org} asks of you:\n\n{code}\n\n"
            "It expires in {minutes} minutes. Enter it on the page you opened from the link "
            "{org} sent to your other contact.\n\n"
            "If you did not expect this message, ignore it: nothing happens without you."
        ),
        "code_sms_body": "{code} is your security code for {org} (valid {minutes} min).",
        "signer_quality": "You sign as: {quality}",
        # pages
        "page_title": "Approval request from {org}",
        "asks": "{org} asks for your approval",
        "request_name": "Request: {name}",
        "what_heading": "What you are asked to approve",
        "action": "Action",
        "values_heading": "Values you approve",
        "document_heading": "Document",
        "otp_heading": "Enter your security code",
        "otp_sent_to": "We sent a 6-digit code to {contact}. It is valid for 10 minutes.",
        "otp_label": "Security code",
        "otp_hint": "6 digits",
        "continue": "Continue",
        "otp_wrong": "That code is not correct. Tries left: {left}.",
        "otp_expired": "This code has expired. Ask for a new one below.",
        "otp_locked": "Too many wrong codes: this code is locked. Ask for a new one below.",
        "otp_format": "Enter the 6 digits of the code.",
        "otp_no_code": "No code is waiting for you. Ask for a new one below.",
        "resend": "Send me a new code",
        "resent": "A new code is on its way.",
        "resend_too_soon": "Please wait {seconds} seconds before asking for another code.",
        "resend_limit": "No more codes can be sent for this request.",
        "session_expired": "Your session has ended. Enter a new code to go on.",
        # the trusted browser session (iframe.cookie)
        "trusted_opened": (
            "This browser is remembered for {hours} h: {org} will not ask you for a code here until then."
        ),
        "trusted_used": "This browser is remembered: no code was needed this time.",
        "trusted_forget": "Forget this browser",
        "trusted_forgotten": "This browser is forgotten: next time, a code is asked.",
        "decide_heading": "Your decision",
        "decide_intro": "Choose for each item. Your decision is recorded and signed.",
        "approve": "Approve",
        "decline": "Decline",
        "send_decision": "Send my decision",
        "decide_missing": "Choose Approve or Decline for every item.",
        "form_invalid": "Check these fields: {fields}.",
        "required": "required",
        "read_document": "Read the document (PDF)",
        "done_heading": "Thank you",
        "done_approved": "You approved: {names}.",
        "done_declined": "You declined: {names}.",
        "done_close": "You can close this page.",
        "ended_heading": "This request is no longer open",
        "ended_body": "It was completed, canceled or has expired. Nothing more is needed from you.",
        "invalid_heading": "This link is not valid",
        "invalid_body": "Check that you opened the whole link from the message you received.",
        "kyc_heading": "Verify your identity",
        "kyc_intro": "{org} needs to confirm who you are before you decide.",
        "kyc_start": "Verify my identity",
        "kyc_check_again": "Check again",
        "kyc_unavailable": "Identity checks are not available at the moment. Please try again later.",
        "kyc_waiting": "{org} is checking your identity. Come back to this link once they have finished.",
        "kyc_failed_heading": "Identity not verified",
        "kyc_failed_body": "Your identity could not be verified, so this request cannot be approved.",
        "kyc_return_elsewhere": (
            "This page was opened outside the browser that started the identity "
            "check, or a second time. Open the link from your message again and "
            "enter a new code to go on."
        ),
        # a mandate's use limits, in words (issue 31): never a limit's raw name
        "limits_heading": "Use limits",
        "limit_uses_one": "At most {n} use",
        "limit_uses": "At most {n} uses",
        "limit_rate_one": "At most {n} use {period}",
        "limit_rate": "At most {n} uses {period}",
        "limit_sum": "At most {amount} {unit} {period}",
        "limit_sum_bare": "At most {amount} {period}",
        "limit_sum_plain": "At most {amount} in total amount {period}",
        "limit_sum_plain_total": "At most {amount} in total amount",
        "limit_described": "{limit}: {description}",
        "period_P1D": "per day (UTC)",
        "period_P1W": "per week (Monday to Sunday, UTC)",
        "period_P1M": "per calendar month (UTC)",
        "period_total": "in total",
        "step": "Step {n} of {total}",
        "language": "Language",
        "unavailable": "The service is busy. Please try again in a moment.",
        # a document's placements the subject's acceptance fills (issue 36)
        "marks_heading": "Placed on the document's PDF when you accept",
        "mark_SIGNATURE": "Your signature, page {page}",
        "mark_INITIALS": "Your initials, page {page}",
        "mark_IDENTITY_FIELD": "A field of your verified identity, page {page}",
        "mark_DATE": "The date of your decision, page {page}",
    },
    "PRT": {
        "email_subject": "{org} pede a sua aprovação",
        "email_body": (
            "{org} pede-lhe que analise e aprove o seguinte "
            "(nomes tal como escritos por {org}):\n\n"
            "{what}\n\n"
            "O seu código de segurança:\n\n{code}\n\nExpira em {minutes} minutos.\n\n"
            "Abra este link para decidir:\n{link}\n\n"
            "Se não esperava esta mensagem, ignore-a: nada acontece sem si."
        ),
        "sms_body": "{code} é o seu código de segurança para {org} (válido {minutes} min). Decida em {link}",
        "link_email_body": (
            "{org} pede-lhe que reveja e aprove o seguinte "
            "(nomes tal como escritos por {org}):\n\n{what}\n\n"
            "Abra esta ligação para decidir:\n{link}\n\n"
            "Quando a abrir, o seu código de segurança é enviado para o seu outro contacto.\n\n"
            "Se não esperava esta mensagem, ignore-a: nada acontece sem si."
        ),
        "link_sms_body": (
            "{org} pede a sua aprovação. Decida em {link} (o código vai para o seu outro contacto)"
        ),
        "code_email_subject": "{org}: o seu código de segurança",
        "code_email_body": (
            "O seu código de segurança para a aprovação que {org} lhe pede:\n\n{code}\n\n"
            "Expira em {minutes} minutos. Introduza-o na página que abriu a partir da ligação "
            "que {org} enviou para o seu outro contacto.\n\n"
            "Se não esperava esta mensagem, ignore-a: nada acontece sem si."
        ),
        "code_sms_body": "{code} é o seu código de segurança para {org} (válido {minutes} min).",
        "signer_quality": "Assina na qualidade de: {quality}",
        "page_title": "Pedido de aprovação de {org}",
        "asks": "{org} pede a sua aprovação",
        "request_name": "Pedido: {name}",
        "what_heading": "O que lhe pedem para aprovar",
        "action": "Ação",
        "values_heading": "Valores que aprova",
        "document_heading": "Documento",
        "otp_heading": "Introduza o seu código de segurança",
        "otp_sent_to": "Enviámos um código de 6 dígitos para {contact}. É válido durante 10 minutos.",
        "otp_label": "Código de segurança",
        "otp_hint": "6 dígitos",
        "continue": "Continuar",
        "otp_wrong": "Esse código não está correto. Tentativas restantes: {left}.",
        "otp_expired": "Este código expirou. Peça um novo abaixo.",
        "otp_locked": "Demasiados códigos errados: este código está bloqueado. Peça um novo abaixo.",
        "otp_format": "Introduza os 6 dígitos do código.",
        "otp_no_code": "Não há nenhum código à sua espera. Peça um novo abaixo.",
        "resend": "Enviar-me um novo código",
        "resent": "Um novo código está a caminho.",
        "resend_too_soon": "Aguarde {seconds} segundos antes de pedir outro código.",
        "resend_limit": "Não é possível enviar mais códigos para este pedido.",
        "session_expired": "A sua sessão terminou. Introduza um novo código para continuar.",
        "trusted_opened": (
            "Este navegador fica lembrado durante {hours} h: {org} não lhe pedirá um código aqui até lá."
        ),
        "trusted_used": "Este navegador está lembrado: desta vez não foi preciso um código.",
        "trusted_forget": "Esquecer este navegador",
        "trusted_forgotten": "Este navegador foi esquecido: da próxima vez, é pedido um código.",
        "decide_heading": "A sua decisão",
        "decide_intro": "Escolha para cada item. A sua decisão é registada e assinada.",
        "approve": "Aprovar",
        "decline": "Recusar",
        "send_decision": "Enviar a minha decisão",
        "decide_missing": "Escolha Aprovar ou Recusar para cada item.",
        "form_invalid": "Verifique estes campos: {fields}.",
        "required": "obrigatório",
        "read_document": "Ler o documento (PDF)",
        "done_heading": "Obrigado",
        "done_approved": "Aprovou: {names}.",
        "done_declined": "Recusou: {names}.",
        "done_close": "Pode fechar esta página.",
        "ended_heading": "Este pedido já não está aberto",
        "ended_body": "Foi concluído, cancelado ou expirou. Não é necessário mais nada da sua parte.",
        "invalid_heading": "Este link não é válido",
        "invalid_body": "Verifique se abriu o link completo da mensagem que recebeu.",
        "kyc_heading": "Verifique a sua identidade",
        "kyc_intro": "{org} precisa de confirmar quem é antes de decidir.",
        "kyc_start": "Verificar a minha identidade",
        "kyc_check_again": "Verificar novamente",
        "kyc_unavailable": (
            "As verificações de identidade não estão disponíveis de momento. Tente mais tarde."
        ),
        "kyc_waiting": "{org} está a verificar a sua identidade. Volte a este link quando terminarem.",
        "kyc_failed_heading": "Identidade não verificada",
        "kyc_failed_body": (
            "Não foi possível verificar a sua identidade, por isso este pedido não pode ser aprovado."
        ),
        "kyc_return_elsewhere": (
            "Esta página foi aberta fora do navegador que iniciou a verificação de "
            "identidade, ou pela segunda vez. Abra novamente o link da sua mensagem "
            "e introduza um novo código para continuar."
        ),
        "limits_heading": "Limites de utilização",
        "limit_uses_one": "No máximo {n} utilização",
        "limit_uses": "No máximo {n} utilizações",
        "limit_rate_one": "No máximo {n} utilização {period}",
        "limit_rate": "No máximo {n} utilizações {period}",
        "limit_sum": "No máximo {amount} {unit} {period}",
        "limit_sum_bare": "No máximo {amount} {period}",
        "limit_sum_plain": "No máximo {amount} de montante total {period}",
        "limit_sum_plain_total": "No máximo {amount} de montante total",
        "limit_described": "{limit}: {description}",
        "period_P1D": "por dia (UTC)",
        "period_P1W": "por semana (de segunda a domingo, UTC)",
        "period_P1M": "por mês civil (UTC)",
        "period_total": "no total",
        "step": "Passo {n} de {total}",
        "language": "Idioma",
        "unavailable": "O serviço está ocupado. Tente novamente dentro de momentos.",
        # a document's placements the subject's acceptance fills (issue 36)
        "marks_heading": "Colocado no PDF do documento quando aceitar",
        "mark_SIGNATURE": "A sua assinatura, página {page}",
        "mark_INITIALS": "As suas iniciais, página {page}",
        "mark_IDENTITY_FIELD": "Um campo da sua identidade verificada, página {page}",
        "mark_DATE": "A data da sua decisão, página {page}",
    },
    "SPA": {
        "email_subject": "{org} solicita su aprobación",
        "email_body": (
            "{org} le pide que revise y apruebe lo siguiente "
            "(nombres tal como los escribió {org}):\n\n"
            "{what}\n\n"
            "Su código de seguridad:\n\n{code}\n\nCaduca en {minutes} minutos.\n\n"
            "Abra este enlace para decidir:\n{link}\n\n"
            "Si no esperaba este mensaje, ignórelo: nada ocurre sin usted."
        ),
        "sms_body": "{code} es su código de seguridad para {org} (válido {minutes} min). Decida en {link}",
        "link_email_body": (
            "{org} le pide que revise y apruebe lo siguiente "
            "(nombres tal como los escribió {org}):\n\n{what}\n\n"
            "Abra este enlace para decidir:\n{link}\n\n"
            "Al abrirlo, su código de seguridad se envía a su otro contacto.\n\n"
            "Si no esperaba este mensaje, ignórelo: no ocurre nada sin usted."
        ),
        "link_sms_body": "{org} solicita su aprobación. Decida en {link} (el código va a su otro contacto)",
        "code_email_subject": "{org}: su código de seguridad",
        "code_email_body": (
            "Su código de seguridad para la aprobación que {org} le solicita:\n\n{code}\n\n"
            "Caduca en {minutes} minutos. Introdúzcalo en la página que abrió desde el enlace "
            "que {org} envió a su otro contacto.\n\n"
            "Si no esperaba este mensaje, ignórelo: no ocurre nada sin usted."
        ),
        "code_sms_body": "{code} es su código de seguridad para {org} (válido {minutes} min).",
        "signer_quality": "Firma en calidad de: {quality}",
        "page_title": "Solicitud de aprobación de {org}",
        "asks": "{org} solicita su aprobación",
        "request_name": "Solicitud: {name}",
        "what_heading": "Lo que se le pide aprobar",
        "action": "Acción",
        "values_heading": "Valores que aprueba",
        "document_heading": "Documento",
        "otp_heading": "Introduzca su código de seguridad",
        "otp_sent_to": "Enviamos un código de 6 dígitos a {contact}. Es válido durante 10 minutos.",
        "otp_label": "Código de seguridad",
        "otp_hint": "6 dígitos",
        "continue": "Continuar",
        "otp_wrong": "Ese código no es correcto. Intentos restantes: {left}.",
        "otp_expired": "Este código ha caducado. Solicite uno nuevo abajo.",
        "otp_locked": "Demasiados códigos incorrectos: este código está bloqueado. Solicite uno nuevo abajo.",
        "otp_format": "Introduzca los 6 dígitos del código.",
        "otp_no_code": "No hay ningún código esperándole. Solicite uno nuevo abajo.",
        "resend": "Enviarme un código nuevo",
        "resent": "Un código nuevo está en camino.",
        "resend_too_soon": "Espere {seconds} segundos antes de pedir otro código.",
        "resend_limit": "No se pueden enviar más códigos para esta solicitud.",
        "session_expired": "Su sesión ha terminado. Introduzca un código nuevo para continuar.",
        "trusted_opened": (
            "Este navegador se recuerda durante {hours} h: {org} no le pedirá un código aquí hasta entonces."
        ),
        "trusted_used": "Este navegador se recuerda: esta vez no hizo falta un código.",
        "trusted_forget": "Olvidar este navegador",
        "trusted_forgotten": "Este navegador se ha olvidado: la próxima vez se pedirá un código.",
        "decide_heading": "Su decisión",
        "decide_intro": "Elija para cada elemento. Su decisión queda registrada y firmada.",
        "approve": "Aprobar",
        "decline": "Rechazar",
        "send_decision": "Enviar mi decisión",
        "decide_missing": "Elija Aprobar o Rechazar para cada elemento.",
        "form_invalid": "Revise estos campos: {fields}.",
        "required": "obligatorio",
        "read_document": "Leer el documento (PDF)",
        "done_heading": "Gracias",
        "done_approved": "Ha aprobado: {names}.",
        "done_declined": "Ha rechazado: {names}.",
        "done_close": "Puede cerrar esta página.",
        "ended_heading": "Esta solicitud ya no está abierta",
        "ended_body": "Se completó, se canceló o ha caducado. No se necesita nada más de usted.",
        "invalid_heading": "Este enlace no es válido",
        "invalid_body": "Compruebe que abrió el enlace completo del mensaje que recibió.",
        "kyc_heading": "Verifique su identidad",
        "kyc_intro": "{org} necesita confirmar quién es usted antes de que decida.",
        "kyc_start": "Verificar mi identidad",
        "kyc_check_again": "Comprobar de nuevo",
        "kyc_unavailable": "Las comprobaciones de identidad no están disponibles ahora. Inténtelo más tarde.",
        "kyc_waiting": "{org} está comprobando su identidad. Vuelva a este enlace cuando hayan terminado.",
        "kyc_failed_heading": "Identidad no verificada",
        "kyc_failed_body": "No se pudo verificar su identidad, por lo que esta solicitud no puede aprobarse.",
        "kyc_return_elsewhere": (
            "Esta página se abrió fuera del navegador que inició la comprobación de "
            "identidad, o por segunda vez. Abra de nuevo el enlace de su mensaje e "
            "introduzca un código nuevo para continuar."
        ),
        "limits_heading": "Límites de uso",
        "limit_uses_one": "Como máximo {n} uso",
        "limit_uses": "Como máximo {n} usos",
        "limit_rate_one": "Como máximo {n} uso {period}",
        "limit_rate": "Como máximo {n} usos {period}",
        "limit_sum": "Como máximo {amount} {unit} {period}",
        "limit_sum_bare": "Como máximo {amount} {period}",
        "limit_sum_plain": "Como máximo {amount} de importe total {period}",
        "limit_sum_plain_total": "Como máximo {amount} de importe total",
        "limit_described": "{limit}: {description}",
        "period_P1D": "por día (UTC)",
        "period_P1W": "por semana (de lunes a domingo, UTC)",
        "period_P1M": "por mes natural (UTC)",
        "period_total": "en total",
        "step": "Paso {n} de {total}",
        "language": "Idioma",
        "unavailable": "El servicio está ocupado. Inténtelo de nuevo en un momento.",
        # a document's placements the subject's acceptance fills (issue 36)
        "marks_heading": "Se coloca en el PDF del documento cuando acepte",
        "mark_SIGNATURE": "Su firma, página {page}",
        "mark_INITIALS": "Sus iniciales, página {page}",
        "mark_IDENTITY_FIELD": "Un campo de su identidad verificada, página {page}",
        "mark_DATE": "La fecha de su decisión, página {page}",
    },
    "FRA": {
        "email_subject": "{org} demande votre approbation",
        "email_body": (
            "{org} vous demande d'examiner et d'approuver ce qui suit "
            "(noms tels que rédigés par {org}) :\n\n"
            "{what}\n\n"
            "Votre code de sécurité :\n\n{code}\n\nIl expire dans {minutes} minutes.\n\n"
            "Ouvrez ce lien pour décider :\n{link}\n\n"
            "Si vous n'attendiez pas ce message, ignorez-le : rien ne se fait sans vous."
        ),
        "sms_body": (
            "{code} est votre code de sécurité pour {org} (valable {minutes} min). Décidez sur {link}"
        ),
        "link_email_body": (
            "{org} vous demande d'examiner et d'approuver ce qui suit "
            "(noms tels qu'écrits par {org}) :\n\n{what}\n\n"
            "Ouvrez ce lien pour décider :\n{link}\n\n"
            "À son ouverture, votre code de sécurité est envoyé à votre autre contact.\n\n"
            "Si vous n'attendiez pas ce message, ignorez-le : rien ne se fait sans vous."
        ),
        "link_sms_body": (
            "{org} demande votre approbation. Décidez sur {link} (le code va à votre autre contact)"
        ),
        "code_email_subject": "{org} : votre code de sécurité",
        "code_email_body": (
            "Votre code de sécurité pour l'approbation que {org} vous demande :\n\n{code}\n\n"
            "Il expire dans {minutes} minutes. Saisissez-le sur la page ouverte depuis le lien "
            "que {org} a envoyé à votre autre contact.\n\n"
            "Si vous n'attendiez pas ce message, ignorez-le : rien ne se fait sans vous."
        ),
        "code_sms_body": "{code} est votre code de sécurité pour {org} (valable {minutes} min).",
        "signer_quality": "Vous signez en qualité de : {quality}",
        "page_title": "Demande d'approbation de {org}",
        "asks": "{org} demande votre approbation",
        "request_name": "Demande : {name}",
        "what_heading": "Ce que l'on vous demande d'approuver",
        "action": "Action",
        "values_heading": "Valeurs que vous approuvez",
        "document_heading": "Document",
        "otp_heading": "Saisissez votre code de sécurité",
        "otp_sent_to": "Nous avons envoyé un code à 6 chiffres à {contact}. Il est valable 10 minutes.",
        "otp_label": "Code de sécurité",
        "otp_hint": "6 chiffres",
        "continue": "Continuer",
        "otp_wrong": "Ce code n'est pas correct. Essais restants : {left}.",
        "otp_expired": "Ce code a expiré. Demandez-en un nouveau ci-dessous.",
        "otp_locked": "Trop de codes erronés : ce code est bloqué. Demandez-en un nouveau ci-dessous.",
        "otp_format": "Saisissez les 6 chiffres du code.",
        "otp_no_code": "Aucun code ne vous attend. Demandez-en un nouveau ci-dessous.",
        "resend": "M'envoyer un nouveau code",
        "resent": "Un nouveau code est en route.",
        "resend_too_soon": "Veuillez attendre {seconds} secondes avant de demander un autre code.",
        "resend_limit": "Plus aucun code ne peut être envoyé pour cette demande.",
        "session_expired": "Votre session a pris fin. Saisissez un nouveau code pour continuer.",
        "trusted_opened": (
            "Ce navigateur est mémorisé pendant {hours} h : {org} ne vous demandera pas de code ici d'ici là."
        ),
        "trusted_used": "Ce navigateur est mémorisé : aucun code n'a été nécessaire cette fois.",
        "trusted_forget": "Oublier ce navigateur",
        "trusted_forgotten": "Ce navigateur est oublié : la prochaine fois, un code sera demandé.",
        "decide_heading": "Votre décision",
        "decide_intro": "Choisissez pour chaque élément. Votre décision est enregistrée et signée.",
        "approve": "Approuver",
        "decline": "Refuser",
        "send_decision": "Envoyer ma décision",
        "decide_missing": "Choisissez Approuver ou Refuser pour chaque élément.",
        "form_invalid": "Vérifiez ces champs : {fields}.",
        "required": "obligatoire",
        "read_document": "Lire le document (PDF)",
        "done_heading": "Merci",
        "done_approved": "Vous avez approuvé : {names}.",
        "done_declined": "Vous avez refusé : {names}.",
        "done_close": "Vous pouvez fermer cette page.",
        "ended_heading": "Cette demande n'est plus ouverte",
        "ended_body": "Elle a été terminée, annulée ou a expiré. Rien d'autre n'est attendu de vous.",
        "invalid_heading": "Ce lien n'est pas valide",
        "invalid_body": "Vérifiez que vous avez ouvert le lien complet du message reçu.",
        "kyc_heading": "Vérifiez votre identité",
        "kyc_intro": "{org} doit confirmer votre identité avant que vous ne décidiez.",
        "kyc_start": "Vérifier mon identité",
        "kyc_check_again": "Vérifier à nouveau",
        "kyc_unavailable": (
            "Les vérifications d'identité ne sont pas disponibles pour le moment. Réessayez plus tard."
        ),
        "kyc_waiting": "{org} vérifie votre identité. Revenez sur ce lien lorsque ce sera terminé.",
        "kyc_failed_heading": "Identité non vérifiée",
        "kyc_failed_body": (
            "Votre identité n'a pas pu être vérifiée : cette demande ne peut pas être approuvée."
        ),
        "kyc_return_elsewhere": (
            "Cette page a été ouverte hors du navigateur qui a lancé la vérification "
            "d'identité, ou une seconde fois. Ouvrez à nouveau le lien de votre "
            "message et saisissez un nouveau code pour continuer."
        ),
        "limits_heading": "Limites d'utilisation",
        "limit_uses_one": "Au plus {n} utilisation",
        "limit_uses": "Au plus {n} utilisations",
        "limit_rate_one": "Au plus {n} utilisation {period}",
        "limit_rate": "Au plus {n} utilisations {period}",
        "limit_sum": "Au plus {amount} {unit} {period}",
        "limit_sum_bare": "Au plus {amount} {period}",
        "limit_sum_plain": "Au plus {amount} de montant total {period}",
        "limit_sum_plain_total": "Au plus {amount} de montant total",
        "limit_described": "{limit} : {description}",
        "period_P1D": "par jour (UTC)",
        "period_P1W": "par semaine (du lundi au dimanche, UTC)",
        "period_P1M": "par mois civil (UTC)",
        "period_total": "au total",
        "step": "Étape {n} sur {total}",
        "language": "Langue",
        "unavailable": "Le service est occupé. Réessayez dans un instant.",
        # a document's placements the subject's acceptance fills (issue 36)
        "marks_heading": "Placé sur le PDF du document quand vous acceptez",
        "mark_SIGNATURE": "Votre signature, page {page}",
        "mark_INITIALS": "Vos initiales, page {page}",
        "mark_IDENTITY_FIELD": "Un champ de votre identité vérifiée, page {page}",
        "mark_DATE": "La date de votre décision, page {page}",
    },
}

# the subject's portal (issue 32)
for _language, _texts in PORTAL.items():
    CATALOG[_language].update(_texts)
