! ktr's own reinforcement-learning calls from Fortran (`use ktr`): a TD3 system of TorchFort's test configuration
! (argument 1) made for eight environments (n_envs given at creation), states (1, 8) and rewards (8) in real64
! pushed as they lie, 16 updates per ktr_rl_train call with no losses read back, then TorchFort's constant reward
! learnt (mean |Q - 1| below 1e-2 over the eight states), a checkpoint round trip and a refusal naming the count.
program fortran_ktr_rl
  use, intrinsic :: iso_fortran_env, only: real32, real64
  use ktr
  implicit none
  real(real64) :: s(1, 8), a(1, 8), r(8), d(8), q(8), q2(8), s3(1, 3)
  real(real32) :: p_loss, q_loss
  logical :: ready
  integer :: failures, it, iterations
  real :: tol
  character(len=512) :: config, arg
  failures = 0
  call get_command_argument(1, config)
  ! Arguments 2 and 3 (sanitizer builds): fewer iterations and a looser tolerance than 1300 and TorchFort's 1e-2.
  iterations = 1300; tol = 1e-2
  call get_command_argument(2, arg)
  if (len_trim(arg) > 0) read (arg, *) iterations
  call get_command_argument(3, arg)
  if (len_trim(arg) > 0) read (arg, *) tol
  call expect(ktr_rl_create_system("sys8", trim(config), 8, KTR_DEVICE_CPU), KTR_RESULT_SUCCESS)
  s = 0; r = 1; d = 1
  do it = 1, iterations
    call expect(ktr_rl_predict("sys8", s, a, explore=.true.), KTR_RESULT_SUCCESS)
    call expect(ktr_rl_push("sys8", s, a, r, s, d), KTR_RESULT_SUCCESS)
    call expect(ktr_rl_ready("sys8", ready), KTR_RESULT_SUCCESS)
    if (ready) call expect(ktr_rl_train("sys8", 16), KTR_RESULT_SUCCESS)
  end do
  call expect(ktr_rl_train("sys8", 16, p_loss, q_loss), KTR_RESULT_SUCCESS)
  call expect(ktr_rl_predict("sys8", s, a), KTR_RESULT_SUCCESS)
  call expect(ktr_rl_evaluate("sys8", s, a, q), KTR_RESULT_SUCCESS)
  print '(a, es10.3)', 'the constant reward: mean |Q - 1| = ', sum(abs(q - 1)) / 8
  if (.not. (sum(abs(q - 1)) / 8 < tol)) failures = failures + 1
  if (.not. (q_loss >= 0 .and. q_loss < max(1.0, tol))) failures = failures + 1
  ! A checkpoint, restored into a second system made from the same file: the same values.
  call expect(ktr_rl_save_checkpoint("sys8", "fortran_ktr_rl_ckpt"), KTR_RESULT_SUCCESS)
  call expect(ktr_rl_create_system("copy", trim(config), 8, KTR_DEVICE_CPU), KTR_RESULT_SUCCESS)
  call expect(ktr_rl_load_checkpoint("copy", "fortran_ktr_rl_ckpt"), KTR_RESULT_SUCCESS)
  call expect(ktr_rl_evaluate("copy", s, a, q2), KTR_RESULT_SUCCESS)
  if (any(q2 /= q)) failures = failures + 1
  ! Three environments for a system of eight: refused, naming the count.
  s3 = 0
  call expect(ktr_rl_push("sys8", s3, s3, r(1:3), s3, d(1:3)), KTR_RESULT_INVALID_USAGE)
  if (index(ktr_last_error(), "holds 3 environments") == 0) then
    print '(a)', ktr_last_error()
    failures = failures + 1
  end if
  call expect(ktr_rl_destroy_system("sys8"), KTR_RESULT_SUCCESS)
  call expect(ktr_rl_destroy_system("copy"), KTR_RESULT_SUCCESS)
  call expect(ktr_finalize(), KTR_RESULT_SUCCESS)
  if (failures == 0) then
    print '(a)', 'fortran_ktr_rl: ok'
  else
    print '(a, i0, a)', 'fortran_ktr_rl: ', failures, ' failures'
    stop 1
  end if
contains
  subroutine expect(got, wanted)
    integer, intent(in) :: got, wanted
    if (got /= wanted) then
      print '(a, i0, a, i0, a, a)', 'got ', got, ', expected ', wanted, ': ', ktr_last_error()
      failures = failures + 1
    end if
  end subroutine
end program
